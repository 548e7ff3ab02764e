"""Reductions, scans, sorts, softmax and losses: one pass over the input is the minimum.

FLOPs per input element are the arithmetic steps of a straightforward implementation (noted at
each registration; comparisons count 0); bytes are the input read once plus the (smaller)
outputs written once. Sorting kernels (radix sort) make several passes: counted once, so a
sort shows a low efficiency rather than an invented traffic figure.
"""

from __future__ import annotations

import math

from rooflinectl.costs.registry import OpCost, cost_formula
from rooflinectl.costs.tensors import (
    SCALAR_TYPE_CODES,
    OpCall,
    TensorArg,
    out_itemsize,
    unique_read_bytes,
)


def reduced_numel(x: TensorArg, dims: object) -> int:
    """Output elements of reducing x over dims (an int, a list, or None/[] for all of them)."""
    ndim = len(x.shape)
    if isinstance(dims, bool):
        dims = None
    if isinstance(dims, int):
        dims = [dims]
    if not isinstance(dims, (list, tuple)) or not dims:
        return 1
    wanted = set()
    for d in dims:
        if not isinstance(d, int) or not -ndim <= d < max(ndim, 1):
            return 1
        wanted.add(d % max(ndim, 1))
    return math.prod(n for i, n in enumerate(x.shape) if i not in wanted)


def _reduction(call: OpCall, flops_per_element: float, *, n_outputs: int = 1, index_output: bool = False,
               note: str) -> OpCost | None:
    x = call.input("self")
    if x is None:
        return None
    out = reduced_numel(x, call.get("dim"))
    promoted = _promotes_to_int64(call, x)
    value_size = 8 if promoted else out_itemsize(call, x.itemsize, "dtype")
    written = out * (8 if index_output else value_size) * n_outputs
    if promoted:  # what runs: a cast child writes an int64 copy, which the reduction reads
        return OpCost(float(flops_per_element * x.numel), float(x.numel * 8 + written), "reduction", x.dtype,
                      note + "; an integer/bool input is summed as int64: bytes read its int64 copy (made by a "
                      "cast first), min_bytes the input itself", min_bytes=float(x.footprint_bytes() + written))
    return OpCost(float(flops_per_element * x.numel), float(x.footprint_bytes() + written), "reduction",
                  x.dtype, note)


def _promotes_to_int64(call: OpCall, x: TensorArg) -> bool:
    """sum/prod/cumsum of bool or of an integer narrower than int64, without a dtype, return int64
    (torch's rule), and both the CPU and CUDA paths cast the input to int64 before reducing."""
    return call.name in ("aten::sum", "aten::prod", "aten::nansum", "aten::cumsum", "aten::cumprod") \
        and x.dtype in ("bool", "uint8", "int8", "int16", "int32") and call.get("dtype") is None


def _register_reduction(names: tuple[str, ...], flops_per_element: float, n_outputs: int = 1,
                        index_output: bool = False) -> None:
    note = f"reduction: {flops_per_element:g} FLOP per input element; input read once, result written once"

    def formula(call: OpCall) -> OpCost | None:
        return _reduction(call, flops_per_element, n_outputs=n_outputs, index_output=index_output, note=note)

    formula.__doc__ = note + " (dims from `dim`, output dtype from `dtype` when given)"
    cost_formula(*names, family="reduction")(formula)


_register_reduction(("aten::sum", "aten::mean", "aten::prod", "aten::nansum", "aten::nanmean"), 1)
_register_reduction(("aten::amax", "aten::amin", "aten::all", "aten::any"), 0)
_register_reduction(("aten::argmax", "aten::argmin"), 0, index_output=True)
_register_reduction(("aten::linalg_vector_norm", "aten::norm"), 2)  # square, add
_register_reduction(("aten::var", "aten::std"), 3)  # subtract mean, square, add
_register_reduction(("aten::var_mean", "aten::std_mean"), 4, n_outputs=2)
_register_reduction(("aten::logsumexp",), 3)  # subtract max, exp, add


@cost_formula("aten::max", "aten::min", family="reduction")
def max_min_cost(call: OpCall) -> OpCost | None:
    """max(self) or max(self, dim, keepdim) (max(self, other) is element-wise: aten::max.other):
    no FLOPs; input read once; the dim overload writes values and int64 indices, the full
    reduction one value."""
    x = call.input("self")
    dim = call.get("dim")
    written = x.itemsize if dim is None else reduced_numel(x, dim) * (x.itemsize + 8)
    return OpCost(0.0, float(x.footprint_bytes() + written), "reduction", x.dtype,
                  "max/min: input read once; values (and int64 indices for a dim) written once")


@cost_formula("aten::cumsum", "aten::cumsum_", "aten::cumprod", "aten::cumprod_", family="reduction")
def scan_cost(call: OpCall) -> OpCost | None:
    """Scan (self, dim, dtype): 1 FLOP per element; input read once, output (same size, `dtype`'s
    size when given) written once."""
    x = call.input("self")
    size = 8 if _promotes_to_int64(call, x) else out_itemsize(call, x.itemsize, "dtype")
    return OpCost(float(x.numel), float(x.footprint_bytes() + x.numel * size), "reduction", x.dtype,
                  "scan: 1 FLOP per element" + ("; integer input: int64 output" if size == 8 and x.itemsize < 8 else ""))


def _along(x: TensorArg, dim: object, size: int) -> int:
    """Elements of x with dimension `dim` replaced by `size`."""
    if not x.shape:
        return size
    d = int(dim if isinstance(dim, int) else -1) % len(x.shape)
    return x.numel // max(x.shape[d], 1) * size


@cost_formula("aten::topk", family="reduction")
def topk_cost(call: OpCall) -> OpCost | None:
    """(self, k, dim, largest, sorted): comparisons only (0 FLOPs); input read once, k values and
    k int64 indices per row written once."""
    x = call.input("self")
    out = _along(x, call.get("dim", -1), int(call.get("k")))
    return OpCost(0.0, float(x.footprint_bytes() + out * (x.itemsize + 8)), "reduction", x.dtype,
                  "topk: input read once, k values and int64 indices per row written")


@cost_formula("aten::sort", "aten::argsort", "aten::msort", family="reduction")
def sort_cost(call: OpCall) -> OpCost | None:
    """(self, [stable,] dim, descending): 0 FLOPs. What runs (CPU, and CUDA rows up to 4096 wide):
    the values are copied into the output and an index ramp into the indices (their own child ops),
    then sorted in place: values and int64 indices read once and written once (bytes). min_bytes:
    the input read once, sorted values (not for argsort) and indices written once. A multi-pass
    radix sort (CUDA's wide rows) moves more than either."""
    x = call.input("self")
    values = 0 if call.name == "aten::argsort" else x.nbytes
    indices = 0 if call.name == "aten::msort" else x.numel * 8
    in_place = 2 * (x.nbytes + indices)
    return OpCost(0.0, float(in_place), "reduction", x.dtype,
                  "sort: values and int64 indices sorted in place, each read and written once (their copies in "
                  "are child ops); min_bytes: input read once, outputs written once",
                  min_bytes=float(x.footprint_bytes() + values + indices))


@cost_formula("aten::_softmax", "aten::_log_softmax", "aten::softmax", "aten::log_softmax", family="softmax")
def softmax_cost(call: OpCall) -> OpCost | None:
    """(self, dim, half_to_float | dtype): 4 FLOP per element (subtract max, exp, sum, divide or
    log); one read, one write (fp32 output for half_to_float, `dtype`'s size when given)."""
    x = call.input("self")
    size = 4 if call.get("half_to_float") is True else out_itemsize(call, x.itemsize, "dtype")
    return OpCost(4.0 * x.numel, float(x.footprint_bytes() + x.numel * size), "softmax", x.dtype,
                  "softmax: 4 FLOP/element; input read once, output written once (a fused kernel's minimum)")


@cost_formula("aten::_softmax_backward_data", "aten::_log_softmax_backward_data", family="softmax")
def softmax_backward_cost(call: OpCall) -> OpCost | None:
    """(grad_output, output, dim, input_dtype): 3 FLOP per element; two reads, grad_input written
    in input_dtype."""
    g, y = call.input("grad_output"), call.input("output")
    code = call.get("input_dtype")
    size = SCALAR_TYPE_CODES[code][1] if code in SCALAR_TYPE_CODES else g.itemsize
    return OpCost(3.0 * g.numel, float(unique_read_bytes([g, y]) + g.numel * size), "softmax", g.dtype,
                  "softmax backward: 3 FLOP/element")


@cost_formula("aten::nll_loss_forward", "aten::nll_loss2d_forward", family="loss")
def nll_loss_cost(call: OpCall) -> OpCost | None:
    """(self, target, weight, reduction, ignore_index): gathers one log-probability per target:
    reads the targets and those elements only, 1 FLOP per target; writes the loss and total weight."""
    x, target = call.input("self"), call.input("target")
    return OpCost(float(target.numel), float(target.nbytes + target.numel * x.itemsize + 2 * x.itemsize),
                  "loss", x.dtype, "nll loss: reads targets and the picked log-probabilities")


@cost_formula("aten::nll_loss_backward", "aten::nll_loss2d_backward", family="loss")
def nll_loss_backward_cost(call: OpCall) -> OpCost | None:
    """(grad_output, self, target, weight, reduction, ignore_index, total_weight): reads the targets
    and grad_output, writes one grad_input element per target (1 FLOP each). grad_input is zeroed
    first by its own op (zeros_like: a fill kernel, costed as one); counting the full grad_input
    here too put the H200 GPT-2 trace's nll_loss_backward kernel at 9x its roof."""
    x, target, g = call.input("self"), call.input("target"), call.input("grad_output")
    read = target.footprint_bytes() + (g.footprint_bytes() if g is not None else 0)
    return OpCost(float(target.numel), float(read + target.numel * x.itemsize), "loss", x.dtype,
                  "nll loss backward: targets read, one grad_input element per target written")


def _loss_written(x: TensorArg, reduction: object) -> int:
    return x.itemsize if reduction in (1, 2) else x.nbytes


@cost_formula("aten::mse_loss", family="loss")
def mse_loss_cost(call: OpCall) -> OpCost | None:
    """(self, target, reduction): 3 FLOP per element (subtract, square, add); two reads; one
    value written (mean/sum) or one per element (reduction none)."""
    x, t = call.input("self"), call.input("target")
    written = _loss_written(x, call.get("reduction", 1))
    return OpCost(3.0 * x.numel, float(unique_read_bytes([x, t]) + written), "loss", x.dtype, "mse loss: 3 FLOP/element")


@cost_formula("aten::binary_cross_entropy_with_logits", "aten::binary_cross_entropy", family="loss")
def bce_cost(call: OpCall) -> OpCost | None:
    """(self, target, weight, [pos_weight,] reduction): 6 FLOP per element (log-sigmoid and
    products); reads the inputs once, writes one value (mean/sum) or one per element."""
    x = call.input("self")
    reads = [call.input(n) for n in ("self", "target", "weight", "pos_weight")]
    written = _loss_written(x, call.get("reduction", 1))
    return OpCost(6.0 * x.numel, float(unique_read_bytes(t for t in reads if t is not None) + written), "loss",
                  x.dtype, "binary cross-entropy: 6 FLOP/element")
