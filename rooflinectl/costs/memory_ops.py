"""Copies, casts, concatenation, padding, indexing, embeddings and optimiser updates.

These move data and do (almost) no arithmetic: FLOPs are 0 unless noted, bytes are what must
cross DRAM at least once: the source elements read and the destination elements written.
"""

from __future__ import annotations

import math

from rooflinectl.costs.registry import OpCost, cost_formula
from rooflinectl.costs.tensors import OpCall, TensorArg, is_float, unique_read_bytes


@cost_formula("aten::copy_", family="copy")
def copy_cost(call: OpCall) -> OpCost | None:
    """(self, src, non_blocking): src read once (a broadcast source reads its storage once), self
    written once; a cast is a copy between dtypes. Host-device copies are counted the same way."""
    dst, src = call.tensor(0), call.tensor(1)
    return OpCost(0.0, float(src.footprint_bytes() + dst.nbytes), "copy", dst.dtype,
                  "copy/cast: source read once, destination written once")


@cost_formula("aten::cat", "aten::_cat", family="copy")
def cat_cost(call: OpCall) -> OpCost | None:
    """(tensors, dim): every input read once, the output (their total) written once."""
    parts = [t for t in call.tensors() if t.numel > 0]
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
    x = call.tensor(0)
    pad = list(call.arg(1) or [])
    shape = list(x.shape)
    for i in range(0, len(pad) - 1, 2):
        dim = len(shape) - 1 - i // 2
        shape[dim] += pad[i] + pad[i + 1]
    return OpCost(0.0, float(x.footprint_bytes() + math.prod(shape) * x.itemsize), "copy", x.dtype,
                  "pad: input read once, padded output written once")


def _gathered(rows: int, row_elems: int, index: TensorArg, src: TensorArg) -> float:
    """Index read once, the gathered elements read once and written once."""
    return float(index.nbytes + 2 * rows * row_elems * src.itemsize)


@cost_formula("aten::embedding", family="index")
def embedding_cost(call: OpCall) -> OpCost | None:
    """(weight, indices, ...): reads the indices and one weight row per index, writes the rows."""
    weight, indices = call.tensor(0), call.tensor(1)
    return OpCost(0.0, _gathered(indices.numel, weight.shape[-1], indices, weight), "index", weight.dtype,
                  "embedding: indices read, one row per index read and written")


@cost_formula("aten::index_select", family="index")
def index_select_cost(call: OpCall) -> OpCost | None:
    """(self, dim, index): reads the index and the selected slices, writes them."""
    x, dim, index = call.tensor(0), call.arg(1), call.tensor(2)
    slice_elems = x.numel // max(x.shape[dim], 1) if x.shape else 1
    return OpCost(0.0, _gathered(index.numel, slice_elems, index, x), "index", x.dtype,
                  "index_select: selected slices read once and written once")


@cost_formula("aten::gather", family="index")
def gather_cost(call: OpCall) -> OpCost | None:
    """(self, dim, index): output has the index's shape: index read, gathered elements read and written."""
    x, index = call.tensor(0), call.tensor(2)
    return OpCost(0.0, _gathered(index.numel, 1, index, x), "index", x.dtype,
                  "gather: index read, one element per index read and written")


@cost_formula("aten::scatter", "aten::scatter_", "aten::scatter_add", "aten::scatter_add_",
              "aten::scatter_reduce", "aten::scatter_reduce_", family="index")
def scatter_cost(call: OpCall) -> OpCost | None:
    """(self, dim, index, src, ...): index and src read, one element written per index
    (out-of-place variants also copy self: counted as a read and a write of self)."""
    x, index = call.tensor(0), call.tensor(2)
    src = call.tensor(3)
    moved = index.numel * x.itemsize
    extra = 0 if call.name.endswith("_") else 2 * x.nbytes
    flops = float(index.numel) if "add" in call.name or "reduce" in call.name else 0.0
    return OpCost(flops, float(index.nbytes + (src.nbytes if src else 0) + moved + extra), "index", x.dtype,
                  "scatter: index and src read, targets written")


@cost_formula("aten::index", family="index")
def index_cost(call: OpCall) -> OpCost | None:
    """(self, indices): advanced indexing; assumes the index tensors address the leading dims
    (broadcast together): output = broadcast(index) x remaining dims, read once and written once."""
    x = call.tensor(0)
    indices = call.tensors()[1:]
    if not indices:
        return None
    if all(t.dtype == "bool" for t in indices):  # boolean mask: output size unknown; bound it by the mask
        rows = max(t.numel for t in indices)
        tail = math.prod(x.shape[len(indices[0].shape):])
        return OpCost(0.0, float(sum(t.nbytes for t in indices) + 2 * rows * tail * x.itemsize), "index",
                      x.dtype, "boolean-mask index: upper bound (every mask element selected)")
    lead = max(t.numel for t in indices)
    tail = math.prod(x.shape[len(indices):])
    return OpCost(0.0, float(sum(t.nbytes for t in indices) + 2 * lead * tail * x.itemsize), "index",
                  x.dtype, "index: index tensors read, selected elements read and written")


@cost_formula("aten::index_put_", "aten::_index_put_impl_", family="index")
def index_put_cost(call: OpCall) -> OpCost | None:
    """(self, indices, values, accumulate): indices and values read, values.numel elements written."""
    tensors = call.tensors()
    x, values = tensors[0], tensors[-1]
    index_bytes = sum(t.nbytes for t in tensors[1:-1])
    return OpCost(0.0, float(index_bytes + values.nbytes + values.numel * x.itemsize), "index", x.dtype,
                  "index_put: indices and values read, targets written")


@cost_formula("aten::embedding_dense_backward", family="index")
def embedding_backward_cost(call: OpCall) -> OpCost | None:
    """(grad_output, indices, num_weights, padding_idx, scale_grad_by_freq): grad rows read and
    accumulated (1 FLOP per element) into a zeroed [num_weights, D] gradient written once."""
    g, indices = call.tensor(0), call.tensor(1)
    num_weights = int(call.arg(2))
    dim = g.shape[-1]
    return OpCost(float(g.numel), float(g.nbytes + indices.nbytes + num_weights * dim * g.itemsize), "index",
                  g.dtype, "embedding backward: grads read once, weight gradient written once")


def _tensor_lists(call: OpCall) -> list[list[TensorArg]]:
    return [[t for t in a if isinstance(t, TensorArg)] for a in call.args if isinstance(a, (list, tuple))]


@cost_formula("aten::_fused_adam_", "aten::_fused_adamw_", family="optimizer")
def fused_adam_cost(call: OpCall) -> OpCost | None:
    """(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, ...): per parameter
    element, params/grads/moments read once (4) and params/moments written once (3); about 15 FLOP
    (moment updates, bias correction, sqrt, divide, weight decay)."""
    lists = _tensor_lists(call)
    params = lists[0]
    elems = sum(t.numel for t in params)
    item = params[0].itemsize if params else 4
    read = sum(t.nbytes for lst in lists[:4] for t in lst)
    return OpCost(15.0 * elems, float(read + 3 * elems * item), "optimizer", params[0].dtype if params else "fp32",
                  "fused Adam: 4 reads and 3 writes per parameter element, 15 FLOP")


def _foreach(call: OpCall, flops_per_element: float) -> OpCost | None:
    lists = _tensor_lists(call)
    if not lists:
        return None
    first = lists[0]
    elems = sum(t.numel for t in first)
    # Each tensor read once (the same tensor in two lists counts once); a zero fill reads nothing.
    read = 0 if "_foreach_zero" in call.name else unique_read_bytes(t for lst in lists for t in lst)
    inplace = call.name.endswith("_")
    written = sum(t.nbytes for t in first)
    note = "foreach: every list read once, " + ("the first list written in place" if inplace else "one output list written")
    return OpCost(flops_per_element * elems, float(read + written), "optimizer", first[0].dtype if first else "fp32", note)


def _register_foreach(names: tuple[str, ...], flops_per_element: float) -> None:
    def formula(call: OpCall) -> OpCost | None:
        return _foreach(call, flops_per_element)

    formula.__doc__ = f"foreach: {flops_per_element:g} FLOP per element of the first list"
    full = tuple(f"aten::_foreach_{n}" for n in names) + tuple(f"aten::_foreach_{n}_" for n in names)
    cost_formula(*full, family="optimizer")(formula)


_register_foreach(("add", "sub", "mul", "div", "sqrt", "neg", "exp", "reciprocal"), 1)
_register_foreach(("addcmul", "addcdiv", "lerp"), 2)
_register_foreach(("copy", "zero", "maximum", "minimum", "clamp_min", "clamp_max", "sign", "abs"), 0)
