"""Reductions, softmax, normalisations and losses: one pass over the input is the minimum.

FLOPs per input element are the arithmetic steps of a straightforward implementation (noted at
each registration); bytes are the input read once plus the (smaller) outputs written once.
"""

from __future__ import annotations

import math

from rooflinectl.costs.registry import OpCost, cost_formula
from rooflinectl.costs.tensors import SCALAR_TYPE_CODES, OpCall, TensorArg, unique_read_bytes


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
            return 1  # not a dim list after all (e.g. a dtype code): a full reduction
        wanted.add(d % max(ndim, 1))
    return math.prod(n for i, n in enumerate(x.shape) if i not in wanted)


def _reduction(call: OpCall, flops_per_element: float, *, n_outputs: int = 1, out_itemsize: int | None = None,
               note: str, dim_index: int = 1) -> OpCost | None:
    x = call.tensor(0)
    if x is None:
        return None
    out = reduced_numel(x, call.arg(dim_index))
    written = out * (out_itemsize or x.itemsize) * n_outputs
    return OpCost(float(flops_per_element * x.numel), float(x.footprint_bytes() + written), "reduction",
                  x.dtype, note)


def _register_reduction(names: tuple[str, ...], flops_per_element: float, n_outputs: int = 1,
                        out_itemsize: int | None = None, dim_index: int = 1) -> None:
    note = f"reduction: {flops_per_element:g} FLOP per input element; input read once, result written once"

    def formula(call: OpCall) -> OpCost | None:
        return _reduction(call, flops_per_element, n_outputs=n_outputs, out_itemsize=out_itemsize, note=note,
                          dim_index=dim_index)

    formula.__doc__ = note
    cost_formula(*names, family="reduction")(formula)


_register_reduction(("aten::sum", "aten::mean", "aten::prod", "aten::nansum", "aten::nanmean"), 1)
_register_reduction(("aten::amax", "aten::amin", "aten::all", "aten::any"), 0)
_register_reduction(("aten::argmax", "aten::argmin"), 0, out_itemsize=8)


@cost_formula("aten::max", "aten::min", family="reduction")
def max_min_cost(call: OpCall) -> OpCost | None:
    """(self) or (self, dim, keepdim): no FLOPs; input read once; the dim overload writes values and
    int64 indices, the full reduction one value."""
    x = call.tensor(0)
    if x is None:
        return None
    if call.arg(1) is None:
        written = x.itemsize
    else:
        written = reduced_numel(x, call.arg(1)) * (x.itemsize + 8)
    return OpCost(0.0, float(x.footprint_bytes() + written), "reduction", x.dtype,
                  "max/min: input read once; values (and int64 indices for a dim) written once")


# (self, ord/p, dim, keepdim, ...): the dims are the third input.
_register_reduction(("aten::linalg_vector_norm", "aten::norm"), 2, dim_index=2)  # square, add
_register_reduction(("aten::var", "aten::std"), 3)  # subtract mean, square, add
_register_reduction(("aten::var_mean", "aten::std_mean"), 4, n_outputs=2)
_register_reduction(("aten::logsumexp",), 3)  # subtract max, exp, add


@cost_formula("aten::cumsum", "aten::cumsum_", "aten::cumprod", family="reduction")
def scan_cost(call: OpCall) -> OpCost | None:
    """Scan: 1 FLOP per element; input read once, output (same size) written once."""
    x = call.tensor(0)
    return OpCost(float(x.numel), float(x.footprint_bytes() + x.nbytes), "reduction", x.dtype,
                  "scan: 1 FLOP per element")


@cost_formula("aten::_softmax", "aten::_log_softmax", "aten::softmax", "aten::log_softmax",
              family="softmax")
def softmax_cost(call: OpCall) -> OpCost | None:
    """_softmax: (self, dim, half_to_float); softmax: (self, dim, dtype code): 4 FLOP per element
    (subtract max, exp, sum, divide or log); one read, one write (fp32 output when half_to_float,
    the requested dtype's size when dtype is given)."""
    x = call.tensor(0)
    flag = call.arg(2)
    if call.name in ("aten::softmax", "aten::log_softmax"):
        code_ok = isinstance(flag, int) and not isinstance(flag, bool) and flag in SCALAR_TYPE_CODES
        out_itemsize = SCALAR_TYPE_CODES[flag][1] if code_ok else x.itemsize
    else:
        out_itemsize = 4 if flag is True else x.itemsize
    return OpCost(4.0 * x.numel, float(x.footprint_bytes() + x.numel * out_itemsize), "softmax", x.dtype,
                  "softmax: 4 FLOP/element; input read once, output written once (a fused kernel's minimum)")


@cost_formula("aten::_softmax_backward_data", "aten::_log_softmax_backward_data", family="softmax")
def softmax_backward_cost(call: OpCall) -> OpCost | None:
    """(grad_output, output, dim, input_dtype): 3 FLOP per element; two reads, one write."""
    g, y = call.tensor(0), call.tensor(1)
    return OpCost(3.0 * g.numel, float(unique_read_bytes([g, y]) + g.nbytes), "softmax", g.dtype,
                  "softmax backward: 3 FLOP/element")


def _row_stats_bytes(x: TensorArg, normalized: object) -> int:
    """fp32 mean and rstd per normalised row."""
    inner = math.prod(normalized) if isinstance(normalized, (list, tuple)) and normalized else x.shape[-1]
    rows = x.numel // max(inner, 1)
    return 2 * rows * 4


@cost_formula("aten::native_layer_norm", "aten::layer_norm", family="norm")
def layer_norm_cost(call: OpCall) -> OpCost | None:
    """(input, normalized_shape, weight, bias, eps): 8 FLOP per element (mean, variance, normalise,
    scale and shift); input, weight, bias read once; output and fp32 mean/rstd written once."""
    x = call.tensor(0)
    reads = [t for t in (x, call.tensor(2), call.tensor(3)) if t is not None]
    written = x.nbytes + _row_stats_bytes(x, call.arg(1))
    return OpCost(8.0 * x.numel, float(unique_read_bytes(reads) + written), "norm", x.dtype,
                  "layer norm: 8 FLOP/element, one read and one write")


@cost_formula("aten::native_layer_norm_backward", family="norm")
def layer_norm_backward_cost(call: OpCall) -> OpCost | None:
    """(grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask): 10 FLOP per
    element; grad_out, input, stats, weight read once; grad_input, grad_weight, grad_bias written."""
    g, x = call.tensor(0), call.tensor(1)
    reads = [t for t in (g, x, call.tensor(3), call.tensor(4), call.tensor(5)) if t is not None]
    w = call.tensor(5)
    written = x.nbytes + (2 * w.nbytes if w is not None else 0)
    return OpCost(10.0 * x.numel, float(unique_read_bytes(reads) + written), "norm", x.dtype,
                  "layer norm backward: 10 FLOP/element")


@cost_formula("aten::_fused_rms_norm", "aten::rms_norm", family="norm")
def rms_norm_cost(call: OpCall) -> OpCost | None:
    """(input, normalized_shape, weight, eps): 4 FLOP per element (square, add, scale, weight);
    input and weight read once, output and fp32 rstd written once."""
    x = call.tensor(0)
    reads = [t for t in (x, call.tensor(2)) if t is not None]
    written = x.nbytes + _row_stats_bytes(x, call.arg(1)) // 2
    return OpCost(4.0 * x.numel, float(unique_read_bytes(reads) + written), "norm", x.dtype,
                  "RMS norm: 4 FLOP/element")


@cost_formula("aten::native_batch_norm", "aten::_native_batch_norm_legit",
              "aten::_native_batch_norm_legit_no_training", "aten::cudnn_batch_norm",
              "aten::_batch_norm_impl_index", family="norm")
def batch_norm_cost(call: OpCall) -> OpCost | None:
    """(input, weight, bias, running_mean, running_var, ...): 6 FLOP per element in training
    (statistics plus affine), input read once and output written once (a two-pass kernel reads twice)."""
    x = call.tensor(0)
    params = [t for t in call.tensors()[1:5]]
    return OpCost(6.0 * x.numel, float(unique_read_bytes([x, *params]) + x.nbytes), "norm", x.dtype,
                  "batch norm: 6 FLOP/element, minimum one read (two-pass kernels read twice)")


@cost_formula("aten::native_group_norm", family="norm")
def group_norm_cost(call: OpCall) -> OpCost | None:
    """(input, weight, bias, N, C, HxW, group, eps): 8 FLOP per element, one read, one write."""
    x = call.tensor(0)
    params = [t for t in (call.tensor(1), call.tensor(2)) if t is not None]
    return OpCost(8.0 * x.numel, float(unique_read_bytes([x, *params]) + x.nbytes), "norm", x.dtype,
                  "group norm: 8 FLOP/element")


@cost_formula("aten::nll_loss_forward", "aten::nll_loss2d_forward", family="loss")
def nll_loss_cost(call: OpCall) -> OpCost | None:
    """(self, target, weight, reduction, ignore_index): gathers one log-probability per target:
    reads the targets and those elements only, 1 FLOP per target."""
    x, target = call.tensor(0), call.tensor(1)
    return OpCost(float(target.numel), float(target.nbytes + target.numel * x.itemsize + 2 * x.itemsize),
                  "loss", x.dtype, "nll loss: reads targets and the picked log-probabilities")


@cost_formula("aten::nll_loss_backward", "aten::nll_loss2d_backward", family="loss")
def nll_loss_backward_cost(call: OpCall) -> OpCost | None:
    """(grad_output, self, target, ...): writes grad_input (mostly zeros) once, reads the targets."""
    x, target = call.tensor(1), call.tensor(2)
    return OpCost(float(target.numel), float(x.nbytes + target.nbytes), "loss", x.dtype,
                  "nll loss backward: grad_input written once")


@cost_formula("aten::mse_loss", family="loss")
def mse_loss_cost(call: OpCall) -> OpCost | None:
    """(self, target, reduction): 3 FLOP per element (subtract, square, add); two reads."""
    x, t = call.tensor(0), call.tensor(1)
    written = x.itemsize if call.arg(2) in (1, 2) else x.nbytes
    return OpCost(3.0 * x.numel, float(unique_read_bytes([x, t]) + written), "loss", x.dtype, "mse loss: 3 FLOP/element")


@cost_formula("aten::binary_cross_entropy_with_logits", "aten::binary_cross_entropy", family="loss")
def bce_cost(call: OpCall) -> OpCost | None:
    """binary_cross_entropy: (self, target, weight, reduction); _with_logits: (self, target, weight,
    pos_weight, reduction): 6 FLOP per element (log-sigmoid and products); reads inputs once, writes
    one value (mean/sum) or one per element (reduction none)."""
    x = call.tensor(0)
    reads = [t for t in call.tensors()[:4]]
    reduction = call.arg(4 if call.name.endswith("_with_logits") else 3, 1)
    written = x.itemsize if reduction in (1, 2) else x.nbytes
    return OpCost(6.0 * x.numel, float(unique_read_bytes(reads) + written), "loss", x.dtype,
                  "binary cross-entropy: 6 FLOP/element")
