"""Copies, casts, concatenation, padding, indexing and embeddings.

These move data and do (almost) no arithmetic: FLOPs are 0 unless noted, bytes are what must
cross DRAM at least once: the source elements read and the destination elements written. An
index tensor is read at its footprint (an index expanded with stride 0, as index_select's
gather gets, reads its source once).
"""

from __future__ import annotations

import math

from rooflinectl.costs.registry import NotModelled, OpCost, cost_formula
from rooflinectl.costs.tensors import (
    SCALAR_TYPE_CODES,
    OpCall,
    TensorArg,
    broadcast_shape,
    is_float,
    unique_read_bytes,
)


@cost_formula("aten::copy_", family="copy")
def copy_cost(call: OpCall) -> OpCost | None:
    """(self, src, non_blocking): src read once (a broadcast source reads its storage once), self
    written once; a cast is a copy between dtypes. Host-device copies are counted the same way."""
    dst, src = call.input("self"), call.input("src")
    cast = src.dtype != dst.dtype
    return OpCost(0.0, float(src.footprint_bytes() + dst.nbytes), "copy", f"{src.dtype}->{dst.dtype}" if cast else dst.dtype,
                  ("cast" if cast else "copy") + ": source read once, destination written once")


@cost_formula("aten::cat", family="copy")
def cat_cost(call: OpCall) -> OpCost | None:
    """(tensors, dim): every input read once, the output (their total) written once."""
    parts = [t for t in call.tensor_list("tensors") if t.numel > 0]
    if not parts:
        return None
    # The output has the promoted dtype (cat([fp32, fp64]) writes fp64): the widest float part,
    # or the widest part when none is float.
    out = max((t for t in parts if is_float(t.dtype)), key=lambda t: t.itemsize, default=None) \
        or max(parts, key=lambda t: t.itemsize)
    total = sum(t.numel for t in parts) * out.itemsize
    return OpCost(0.0, float(unique_read_bytes(parts) + total), "copy", out.dtype,
                  "cat: inputs read once, output written once")


@cost_formula("aten::constant_pad_nd", family="copy")
def pad_cost(call: OpCall) -> OpCost | None:
    """(self, pad, value): input read once, the padded output written once."""
    x = call.input("self")
    pad = list(call.get("pad") or [])
    shape = list(x.shape)
    for i in range(0, len(pad) - 1, 2):
        dim = len(shape) - 1 - i // 2
        shape[dim] += pad[i] + pad[i + 1]
    return OpCost(0.0, float(x.footprint_bytes() + math.prod(shape) * x.itemsize), "copy", x.dtype,
                  "pad: input read once, padded output written once")


def _gathered(elements: int, index: TensorArg, src: TensorArg) -> float:
    """Index read once (at its footprint), the gathered elements read once and written once."""
    return float(index.footprint_bytes() + 2 * elements * src.itemsize)


@cost_formula("aten::embedding", family="index")
def embedding_cost(call: OpCall) -> OpCost | None:
    """(weight, indices, ...): reads the indices and one weight row per index, writes the rows."""
    weight, indices = call.input("weight"), call.input("indices")
    return OpCost(0.0, _gathered(indices.numel * weight.shape[-1], indices, weight), "index", weight.dtype,
                  "embedding: indices read, one row per index read and written")


@cost_formula("aten::index_select", family="index")
def index_select_cost(call: OpCall) -> OpCost | None:
    """(self, dim, index): reads the index and the selected slices, writes them."""
    x, dim, index = call.input("self"), int(call.get("dim")), call.input("index")
    slice_elems = x.numel // max(x.shape[dim], 1) if x.shape else 1
    return OpCost(0.0, _gathered(index.numel * slice_elems, index, x), "index", x.dtype,
                  "index_select: selected slices read once and written once")


@cost_formula("aten::gather", family="index")
def gather_cost(call: OpCall) -> OpCost | None:
    """(self, dim, index, sparse_grad, [out]): the output has the index's shape: the index read
    at its footprint (index_select on CUDA gathers with an index expanded along the row: its
    source is one index per row), one element per index read and written."""
    x, index = call.input("self"), call.input("index")
    return OpCost(0.0, _gathered(index.numel, index, x), "index", x.dtype,
                  "gather: index read, one element per index read and written")


@cost_formula("aten::scatter", "aten::scatter_", "aten::scatter_add", "aten::scatter_add_",
              "aten::scatter_reduce", "aten::scatter_reduce_", family="index")
def scatter_cost(call: OpCall) -> OpCost | None:
    """(self, dim, index, src | value, ...): index and src read, one target per index written;
    an accumulating scatter (add, reduce) also reads its targets (1 FLOP per index); the
    out-of-place variants first copy self (a read and a write of self)."""
    x, index, src = call.input("self"), call.input("index"), call.input("src")
    accumulates = "add" in call.name or "reduce" in call.name or call.get("reduce") is not None
    targets = index.numel * x.itemsize * (2 if accumulates else 1)
    copy = 0 if call.name.endswith("_") else 2 * x.nbytes
    flops = float(index.numel) if accumulates else 0.0
    read = index.footprint_bytes() + (src.footprint_bytes() if src is not None else 0)
    return OpCost(flops, float(read + targets + copy), "index", x.dtype,
                  "scatter: index and src read, targets written (and read, when accumulating)")


@cost_formula("aten::index_add", "aten::index_add_", family="index")
def index_add_cost(call: OpCall) -> OpCost | None:
    """(self, dim, index, source, alpha): each source slice added into the slice of self its
    index names: index and source read, those targets read and written (1 FLOP per source
    element); index_add (out of place) first copies self."""
    x, index, source = call.input("self"), call.input("index"), call.input("source")
    copy = 0 if call.name.endswith("_") else 2 * x.nbytes
    read = index.footprint_bytes() + source.footprint_bytes()
    return OpCost(float(source.numel), float(read + 2 * source.numel * x.itemsize + copy), "index", x.dtype,
                  "index_add: index and source read, target slices read and written")


def advanced_index_shape(x: tuple[int, ...], indices: list[TensorArg | None]) -> tuple[tuple[int, ...], bool]:
    """(output shape, exact) of x[indices] with None for a full slice, as NumPy/PyTorch define it:
    the index tensors broadcast together; their result replaces the dims they index, in place when
    those index tensors are adjacent, else at the front. A bool index of k dims stands for its
    nonzero positions: bounded by its numel (exact=False)."""
    kept: list[tuple[int, int]] = []  # (position in indices, size) of the full slices
    shapes: list[tuple[int, ...]] = []
    tensor_positions: list[int] = []
    exact, dim = True, 0
    for position, t in enumerate(indices):
        if t is None:
            kept.append((position, x[dim]))
            dim += 1
        elif t.dtype in ("bool", "uint8"):
            shapes.append((t.numel,))
            tensor_positions.append(position)
            exact = False
            dim += len(t.shape)
        else:
            shapes.append(t.shape)
            tensor_positions.append(position)
            dim += 1
    b, rest = broadcast_shape(shapes), x[dim:]
    first, last = tensor_positions[0], tensor_positions[-1]
    if tensor_positions == list(range(first, last + 1)):
        before = [n for position, n in kept if position < first]
        after = [n for position, n in kept if position > last]
        return (*before, *b, *after, *rest), exact
    return (*b, *(n for _, n in kept), *rest), exact


def _restride(x: TensorArg, view: tuple[tuple[int, ...], tuple[int, ...]]) -> tuple[int, int, int]:
    """(selected elements, index positions, index tensors) from the restride view's sizes and
    strides: its stride-0 dims are the broadcast index shape, the other dims self's kept dims;
    self's dims not kept are the indexed ones, one int64 index tensor each."""
    sizes, strides = view
    positions = math.prod(n for n, st in zip(sizes, strides) if st == 0)
    kept = sum(1 for st in strides if st != 0)
    return math.prod(sizes), positions, max(len(x.shape) - kept, 1)


@cost_formula("aten::index", "aten::_unsafe_index", family="index")
def index_cost(call: OpCall) -> OpCost | None:
    """(self, indices): advanced indexing (None entries are full slices): index tensors read once,
    the selected elements read once and written once. torch's profiler does not record the
    Tensor?[] indices; then the output shape comes from the op's restride view (the as_strided
    child that has the output's shape, stride 0 along the index dims), and each indexed dim of
    self reads one int64 index tensor of the index shape. A boolean mask is first turned into
    such index tensors by its nonzero child (costed on its own)."""
    x = call.input("self")
    indices = call.get("indices")
    if isinstance(indices, (list, tuple)) and any(isinstance(t, TensorArg) for t in indices):
        entries = [t if isinstance(t, TensorArg) else None for t in indices]
        out_shape, exact = advanced_index_shape(x.shape, entries)
        out = math.prod(out_shape)
        index_bytes = sum(t.footprint_bytes() for t in entries if t is not None)
        note = "index: index tensors read, selected elements read and written" + (
            "" if exact else "; a boolean mask bounds the selection (every element selected)")
    else:
        view = call.hint("index_view")
        if view is None:
            raise NotModelled("the profiler recorded no index tensors and no restride view")
        out, positions, tensors = _restride(x, view)
        index_bytes = 8 * positions * tensors
        note = (f"index: output shape from the restride view; {tensors} int64 index tensor(s) of {positions} "
                "positions read, selected elements read and written")
        mask = call.hint("index_mask")
        if mask is not None:  # the op's minimum reads the mask, not the positions its nonzero made
            return OpCost(0.0, float(index_bytes + 2 * out * x.itemsize), "index", x.dtype,
                          note + "; boolean mask: its positions come from nonzero, min_bytes reads the mask instead",
                          min_bytes=float(math.prod(mask) + 2 * out * x.itemsize))
    return OpCost(0.0, float(index_bytes + 2 * out * x.itemsize), "index", x.dtype, note)


@cost_formula("aten::index_put_", "aten::_index_put_impl_", "aten::index_put", "aten::_unsafe_index_put",
              family="index")
def index_put_cost(call: OpCall) -> OpCost | None:
    """(self, indices, values, accumulate): index tensors and values read (a broadcast value at its
    storage), each target written (read too when accumulating, 1 FLOP each); the out-of-place ops
    first copy self. Without recorded indices the targets come from the restride view (as in
    index); a boolean mask (the input of a masked_fill_ or nonzero child) bounds them by its
    selection's maximum, every element (the note says so)."""
    x, values = call.input("self"), call.input("values")
    indices = [t for t in (call.get("indices") or []) if isinstance(t, TensorArg)]
    view, mask = call.hint("index_view"), call.hint("index_mask")
    accumulate = bool(call.get("accumulate"))
    note = "index_put: indices and values read, targets written" + (" (and read: accumulate)" if accumulate else "")
    if indices:
        index_bytes, targets = sum(t.footprint_bytes() for t in indices), values.numel
    elif view is not None:
        targets, positions, tensors = _restride(x, view)
        index_bytes = 8 * positions * tensors
        note += f"; targets from the restride view, {tensors} int64 index tensor(s) of {positions} positions"
    elif mask is not None:
        index_bytes = math.prod(mask)  # the bool mask, read once
        targets = x.numel // max(math.prod(mask), 1) * math.prod(mask)
        note += "; boolean mask: every element counted as selected (an upper bound)"
    else:
        index_bytes, targets = 0, values.numel
        note += "; the indices were not recorded: their bytes left out"
    written = targets * x.itemsize * (2 if accumulate else 1)
    copy = 0 if call.name.endswith("_") else 2 * x.nbytes
    return OpCost(float(targets) if accumulate else 0.0, float(index_bytes + values.footprint_bytes() + written + copy),
                  "index", x.dtype, note)


@cost_formula("aten::embedding_dense_backward", family="index")
def embedding_backward_cost(call: OpCall) -> OpCost | None:
    """(grad_output, indices, num_weights, padding_idx, scale_grad_by_freq): grad rows read and
    accumulated (1 FLOP per element) into the weight-gradient rows the indices touch (at most
    min(indices, num_weights) rows, read and written). The [num_weights, D] gradient is zeroed
    first by its own op (zeros: a fill kernel, costed as one), not counted again here."""
    g, indices = call.input("grad_output"), call.input("indices")
    num_weights = int(call.get("num_weights"))
    dim = g.shape[-1]
    touched = min(indices.numel, num_weights) * dim * g.itemsize
    return OpCost(float(g.numel), float(g.nbytes + indices.nbytes + 2 * touched), "index", g.dtype,
                  "embedding backward: grads and indices read once, touched weight-gradient rows read and written")


@cost_formula("aten::_embedding_bag", "aten::_embedding_bag_forward_only", family="index")
def embedding_bag_cost(call: OpCall) -> OpCost | None:
    """(weight, indices, offsets, scale_grad_by_freq, mode, ...): one weight row read per index
    and added into its bag (1 FLOP per element; max mode compares: 0); indices and offsets read,
    one row per bag written."""
    weight, indices, offsets = call.input("weight"), call.input("indices"), call.input("offsets")
    dim = weight.shape[-1]
    bags = offsets.numel
    flops = 0.0 if call.get("mode", 0) == 2 else float(indices.numel * dim)
    moved = indices.footprint_bytes() + offsets.footprint_bytes() + (indices.numel + bags) * dim * weight.itemsize
    return OpCost(flops, float(moved), "index", weight.dtype, "embedding bag: rows read once, bags written once")


@cost_formula("aten::flip", "aten::roll", "aten::tril", "aten::triu", "aten::tril_", "aten::triu_", family="copy")
def move_cost(call: OpCall) -> OpCost | None:
    """(self, ...): every element moved once: self read once, an output of its size written once
    (tril/triu write the zeroed triangle too; in place they read and write self)."""
    x = call.input("self")
    return OpCost(0.0, float(x.footprint_bytes() + x.nbytes), "copy", x.dtype,
                  f"{call.name.removeprefix('aten::')}: input read once, output written once")


@cost_formula("aten::reflection_pad1d", "aten::reflection_pad2d", "aten::reflection_pad3d",
              "aten::replication_pad1d", "aten::replication_pad2d", "aten::replication_pad3d", family="copy")
def reflection_pad_cost(call: OpCall) -> OpCost | None:
    """(self, padding): input read once, the padded output written once."""
    x = call.input("self")
    pad = list(call.get("padding") or [])
    shape = list(x.shape)
    for i in range(0, len(pad) - 1, 2):
        shape[len(shape) - 1 - i // 2] += pad[i] + pad[i + 1]
    return OpCost(0.0, float(x.footprint_bytes() + math.prod(shape) * x.itemsize), "copy", x.dtype,
                  "pad: input read once, padded output written once")


@cost_formula("aten::linspace", "aten::logspace", family="elementwise")
def linspace_cost(call: OpCall) -> OpCost | None:
    """(start, end, steps, [base,] dtype | out): `steps` elements written, 2 FLOPs each (start +
    i * step; logspace one more, the power); fp32 unless dtype or out= says otherwise."""
    steps = call.get("steps")
    if not isinstance(steps, int):
        return None
    out, code = call.input("out"), call.get("dtype")
    if out is not None:
        dtype, itemsize = out.dtype, out.itemsize
    else:
        dtype, itemsize = SCALAR_TYPE_CODES.get(code, ("fp32", 4)) if isinstance(code, int) else ("fp32", 4)
    per = 3 if "logspace" in call.name else 2
    return OpCost(float(per * steps), float(steps * itemsize), "elementwise", dtype, "linspace: output written once")


@cost_formula("aten::nonzero", family="index")
def nonzero_cost(call: OpCall) -> OpCost | None:
    """(self): the input read once, one int64 index per (nonzero element, dim) written: the output
    size is the restride its as_strided_ child gives (not recorded otherwise: no cost)."""
    x, out = call.input("self"), call.hint("nonzero_out")
    if out is None:
        raise NotModelled("the output's size (its as_strided_ child) was not recorded")
    return OpCost(0.0, float(x.footprint_bytes() + 8 * math.prod(out)), "index", x.dtype,
                  "nonzero: input read once, int64 indices written (count from the output's restride)")
