"""Normalisations, forward and backward: layer, RMS, batch and group norm.

FLOPs per element are the arithmetic steps of the usual fused kernel (noted per formula).
Bytes: the activations read once and written once, the per-channel or per-row parameters and
statistics read or written once (small). Kernels that make two passes (a channels-last batch
norm backward reduces, then computes grad_input: two kernels reading grad_out and input each)
move about twice our minimum, and show it as an efficiency near 50%.
"""

from __future__ import annotations

import math

from rooflinectl.costs.registry import OpCost, cost_formula
from rooflinectl.costs.tensors import OpCall, TensorArg, unique_read_bytes


def _read(*tensors: TensorArg | None) -> int:
    return unique_read_bytes(t for t in tensors if t is not None)


def _rows(x: TensorArg, normalized: object) -> int:
    inner = math.prod(normalized) if isinstance(normalized, (list, tuple)) and normalized else x.shape[-1]
    return x.numel // max(inner, 1)


def _mask(call: OpCall, n: int) -> list[bool]:
    mask = call.get("output_mask")
    return [bool(m) for m in mask] if isinstance(mask, (list, tuple)) and len(mask) >= n else [True] * n


@cost_formula("aten::native_layer_norm", "aten::layer_norm", family="norm")
def layer_norm_cost(call: OpCall) -> OpCost | None:
    """(input, normalized_shape, weight, bias, eps): 8 FLOP per element (mean, variance,
    normalise, scale and shift); input, weight, bias read once; output and fp32 mean/rstd per
    row written once."""
    x = call.input("input")
    written = x.nbytes + 2 * 4 * _rows(x, call.get("normalized_shape"))
    return OpCost(8.0 * x.numel, float(_read(x, call.input("weight"), call.input("bias")) + written), "norm",
                  x.dtype, "layer norm: 8 FLOP/element, one read and one write")


@cost_formula("aten::native_layer_norm_backward", family="norm")
def layer_norm_backward_cost(call: OpCall) -> OpCost | None:
    """(grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask): 10 FLOP per
    element; grad_out, input, statistics, weight read once; grad_input, grad_weight, grad_bias
    written as output_mask asks."""
    g, x, w = call.input("grad_out"), call.input("input"), call.input("weight")
    mask = _mask(call, 3)
    params = (w.nbytes if w is not None else 0) * (int(mask[1]) + int(mask[2]))
    written = (x.nbytes if mask[0] else 0) + params
    reads = _read(g, x, call.input("mean"), call.input("rstd"), w)
    return OpCost(10.0 * x.numel, float(reads + written), "norm", x.dtype, "layer norm backward: 10 FLOP/element")


@cost_formula("aten::_fused_rms_norm", "aten::rms_norm", family="norm")
def rms_norm_cost(call: OpCall) -> OpCost | None:
    """(input, normalized_shape, weight, eps): 4 FLOP per element (square, add, scale, weight);
    input and weight read once, output and fp32 rstd per row written once."""
    x = call.input("input")
    written = x.nbytes + 4 * _rows(x, call.get("normalized_shape"))
    return OpCost(4.0 * x.numel, float(_read(x, call.input("weight")) + written), "norm", x.dtype,
                  "RMS norm: 4 FLOP/element")


@cost_formula("aten::_fused_rms_norm_backward", family="norm")
def rms_norm_backward_cost(call: OpCall) -> OpCost | None:
    """(grad_out, input, normalized_shape, rstd, weight, output_mask): grad_input 6 FLOP per
    element (dy*w, times x, row sum, rescale, subtract, times rstd), grad_weight 3 more (dy*x*rstd
    summed over rows); reads grad_out, input, rstd, weight once, writes the requested gradients."""
    g, x, w = call.input("grad_out"), call.input("input"), call.input("weight")
    mask = _mask(call, 2)
    flops = (6.0 if mask[0] else 0.0) + (3.0 if mask[1] and w is not None else 0.0)
    written = (x.nbytes if mask[0] else 0) + (w.nbytes if mask[1] and w is not None else 0)
    reads = _read(g, x, call.input("rstd"), w)
    return OpCost(flops * x.numel, float(reads + written), "norm", x.dtype,
                  "RMS norm backward: 6 FLOP/element for grad_input, 3 for grad_weight")


def _channel_params(call: OpCall, *names: str) -> list[TensorArg | None]:
    return [call.input(n) for n in names]


@cost_formula("aten::native_batch_norm", "aten::_native_batch_norm_legit", "aten::_native_batch_norm_legit_no_training",
              "aten::cudnn_batch_norm", "aten::miopen_batch_norm", "aten::_batch_norm_impl_index",
              "aten::_batch_norm_with_update", "aten::_batch_norm_no_update", "aten::_native_batch_norm_legit_functional",
              "aten::_batch_norm_with_update_functional", family="norm")
def batch_norm_cost(call: OpCall) -> OpCost | None:
    """(input, weight, bias, running_mean, running_var, [training,] momentum, eps): training
    (and the _with_update ops) 6 FLOP per element (statistics, then normalise and affine),
    inference 2 (one folded scale and shift); input read once, output written once, the
    per-channel parameters read once (a two-pass training kernel reads the input twice)."""
    x = call.input("input")
    training = call.get("training", call.name in ("aten::_batch_norm_with_update",
                                                  "aten::_batch_norm_with_update_functional"))
    params = _channel_params(call, "weight", "bias", "running_mean", "running_var")
    per_element = 6.0 if training else 2.0
    return OpCost(per_element * x.numel, float(_read(x, *params) + x.nbytes), "norm", x.dtype,
                  f"batch norm ({'training' if training else 'inference'}): {per_element:g} FLOP/element, "
                  "minimum one read (two-pass kernels read twice)")


def _batch_norm_backward(call: OpCall, g: TensorArg, x: TensorArg, training: bool, mask: list[bool]) -> OpCost:
    w = call.input("weight")
    channels = x.shape[1] if len(x.shape) > 1 else 1
    if training:  # grad_input needs both channel sums (of dy and of dy * x_hat) even alone
        per_element = 9.0
    else:
        per_element = (1.0 if mask[0] else 0.0) + (4.0 if mask[1] or mask[2] else 0.0)
    stats = _channel_params(call, "running_mean", "running_var", "save_mean", "save_invstd", "save_var")
    param_size = w.itemsize if w is not None else 4
    written = (x.nbytes if mask[0] else 0) + channels * param_size * (int(mask[1]) + int(mask[2]))
    return OpCost(per_element * x.numel, float(_read(g, x, w, *stats) + written), "norm", x.dtype,
                  f"batch norm backward ({'training' if training else 'inference'}): {per_element:g} FLOP/element; "
                  "grad_out and input read once (two-pass kernels read them twice)")


@cost_formula("aten::native_batch_norm_backward", "aten::batch_norm_backward", family="norm")
def native_batch_norm_backward_cost(call: OpCall) -> OpCost | None:
    """(grad_out, input, weight, running_mean, running_var, save_mean, save_invstd|save_var,
    train|update, eps, output_mask, ...): training 9 FLOP per element (two channel sums, then
    grad_input), inference 1 for grad_input plus 4 for the weight and bias gradients; grad_out,
    input and the per-channel tensors read once, the requested gradients written once."""
    training = bool(call.get("train", call.get("update", True)))
    return _batch_norm_backward(call, call.input("grad_out"), call.input("input"), training, _mask(call, 3))


@cost_formula("aten::cudnn_batch_norm_backward", "aten::miopen_batch_norm_backward", family="norm")
def cudnn_batch_norm_backward_cost(call: OpCall) -> OpCost | None:
    """(input, grad_output, weight, running_mean, running_var, save_mean, save_var, epsilon, ...):
    training backward, all three gradients: 9 FLOP per element."""
    return _batch_norm_backward(call, call.input("grad_output"), call.input("input"), True, [True, True, True])


@cost_formula("aten::native_group_norm", family="norm")
def group_norm_cost(call: OpCall) -> OpCost | None:
    """(input, weight, bias, N, C, HxW, group, eps): 8 FLOP per element; input and parameters
    read once, output and the per-(sample, group) mean and rstd written once."""
    x = call.input("input")
    stats = 2 * int(call.get("N", x.shape[0])) * int(call.get("group", 1)) * x.itemsize
    return OpCost(8.0 * x.numel, float(_read(x, call.input("weight"), call.input("bias")) + x.nbytes + stats),
                  "norm", x.dtype, "group norm: 8 FLOP/element")


@cost_formula("aten::native_group_norm_backward", family="norm")
def group_norm_backward_cost(call: OpCall) -> OpCost | None:
    """(grad_out, input, mean, rstd, weight, N, C, HxW, group, output_mask): 10 FLOP per element
    (as layer norm backward); grad_out, input, statistics and weight read once, the requested
    gradients written once."""
    g, x, w = call.input("grad_out"), call.input("input"), call.input("weight")
    mask = _mask(call, 3)
    channels = int(call.get("C", x.shape[1] if len(x.shape) > 1 else 1))
    written = (x.nbytes if mask[0] else 0) + channels * x.itemsize * (int(mask[1]) + int(mask[2]))
    reads = _read(g, x, call.input("mean"), call.input("rstd"), w)
    return OpCost(10.0 * x.numel, float(reads + written), "norm", x.dtype, "group norm backward: 10 FLOP/element")
