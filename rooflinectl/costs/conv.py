"""Convolutions, forward and backward.

FLOPs: flop_counter's conv_flop_count (2 * output points * Cout * Cin/groups * kernel points;
for a transposed convolution, input points instead of output points), through its registry
for the ops whose arguments it reads right (convolution, _convolution, convolution_overrideable).
Our own count elsewhere (torch_flops.DIFFERS): cudnn_convolution (flop_counter takes its
`benchmark` flag for `transposed`), backward (flop_counter's grad-weight term ignores groups: a
depthwise convolution's is counted C times). A backward pass computes grad-input and
grad-weight as one forward convolution's FLOPs each, when output_mask asks for them; the bias
gradient (a sum over grad_output) is not counted, as the forward's bias add is not.
Bytes: input, weight and bias read once, the output written once (implicit-GEMM kernels reuse
tiles from cache; im2col implementations move more).
"""

from __future__ import annotations

import math
from typing import Any

from torch.utils.flop_counter import conv_flop_count

from rooflinectl.costs.registry import OpCost, cost_formula
from rooflinectl.costs.tensors import OpCall, TensorArg, unique_read_bytes
from rooflinectl.costs.torch_flops import torch_flops


def _at(values: Any, i: int, default: int) -> int:
    if values is None or values == []:
        return default
    if isinstance(values, int):
        return values
    return int(values[i] if i < len(values) else values[-1])


def conv_out_shape(x: tuple[int, ...], w: tuple[int, ...], stride: Any, padding: Any, dilation: Any,
                   transposed: bool, output_padding: Any, groups: int) -> tuple[int, ...]:
    """Output shape of an N-d convolution (the profiler records inputs only); a transposed
    convolution's weight is [Cin, Cout/groups, k...]."""
    dims = []
    for i in range(len(x) - 2):
        size, kernel = x[2 + i], w[2 + i]
        s, p, d = _at(stride, i, 1), _at(padding, i, 0), _at(dilation, i, 1)
        if transposed:
            dims.append((size - 1) * s - 2 * p + d * (kernel - 1) + _at(output_padding, i, 0) + 1)
        else:
            dims.append((size + 2 * p - d * (kernel - 1) - 1) // s + 1)
    out_channels = w[1] * groups if transposed else w[0]
    return (x[0], out_channels, *dims)


def _cost(x: TensorArg, w: TensorArg, reads: list[TensorArg | None], out: tuple[int, ...], flops: float,
          note: str) -> OpCost:
    read = unique_read_bytes(t for t in reads if t is not None)
    return OpCost(float(flops), float(read + math.prod(out) * x.itemsize), "conv", x.dtype, note)


@cost_formula("aten::convolution", "aten::_convolution", "aten::convolution_overrideable", family="conv")
def convolution_cost(call: OpCall) -> OpCost | None:
    """(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    flop_counter's conv_flop on our output shape; input, weight, bias read, output written."""
    x, w = call.input("input"), call.input("weight")
    transposed = bool(call.get("transposed", False))
    out = conv_out_shape(x.shape, w.shape, call.get("stride"), call.get("padding"), call.get("dilation"),
                         transposed, call.get("output_padding"), int(call.get("groups", 1)))
    return _cost(x, w, [x, w, call.input("bias")], out, torch_flops(call, out),
                 "convolution: flop_counter.conv_flop; input, weight, bias read once, output written once")


def _named_conv(call: OpCall, *, transposed: bool = False, groups: int | None = None, dilation: Any = None,
                extra_reads: tuple[str, ...] = (), note: str) -> OpCost:
    x, w = call.input("self"), call.input("weight")
    g = groups if groups is not None else int(call.get("groups", 1))
    out = conv_out_shape(x.shape, w.shape, call.get("stride"), call.get("padding"),
                         dilation if dilation is not None else call.get("dilation"), transposed,
                         call.get("output_padding"), g)
    reads = [x, w, call.input("bias"), *(call.input(n) for n in extra_reads)]
    return _cost(x, w, reads, out, conv_flop_count(list(x.shape), list(w.shape), list(out), transposed), note)


@cost_formula("aten::cudnn_convolution", "aten::mkldnn_convolution", "aten::cudnn_convolution_relu",
              family="conv")
def backend_convolution_cost(call: OpCall) -> OpCost | None:
    """(self, weight, [bias,] padding, stride, dilation, groups, ...): conv_flop_count with
    transposed=False (flop_counter's own registration reads cudnn's `benchmark` as `transposed`);
    the fused ReLU counts 0 FLOPs."""
    return _named_conv(call, note="convolution: conv_flop_count; input, weight, bias read once, output written once")


@cost_formula("aten::cudnn_convolution_add_relu", family="conv")
def conv_add_relu_cost(call: OpCall) -> OpCost | None:
    """(self, weight, z, alpha, bias, stride, padding, dilation, groups): convolution plus
    alpha*z added (1 FLOP per output element; the ReLU counts 0); z read once as well."""
    cost = _named_conv(call, extra_reads=("z",), note="convolution + add + ReLU: conv_flop_count + 1 FLOP/element")
    z = call.input("z")
    return OpCost(cost.flops + z.numel, cost.bytes, "conv", cost.dtype, cost.note)


@cost_formula("aten::cudnn_convolution_transpose", "aten::slow_conv_transpose2d", "aten::slow_conv_transpose3d",
              family="conv")
def transposed_convolution_cost(call: OpCall) -> OpCost | None:
    """(self, weight [Cin, Cout/groups, k...], ...): conv_flop_count for a transposed convolution
    (2 * input points * Cin * Cout/groups * kernel points)."""
    return _named_conv(call, transposed=True, note="transposed convolution: conv_flop_count")


@cost_formula("aten::_slow_conv2d_forward", "aten::_conv_depthwise2d", "aten::slow_conv3d_forward",
              "aten::slow_conv_dilated2d", "aten::slow_conv_dilated3d", family="conv")
def native_convolution_cost(call: OpCall) -> OpCost | None:
    """(self, weight, kernel_size, bias, stride, padding[, dilation]): the CPU/CUDA fallback
    kernels; groups are implied by the weight (a depthwise weight is [C, 1, k...]), so
    conv_flop_count needs none. flop_counter's registration of _slow_conv2d_forward raises
    (it expects a `transposed` argument the op does not have)."""
    return _named_conv(call, groups=1, note="convolution (native kernel): conv_flop_count")


@cost_formula("aten::convolution_backward", family="conv")
def convolution_backward_cost(call: OpCall) -> OpCost | None:
    """(grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
    output_padding, groups, output_mask): grad_input and grad_weight each cost one forward
    convolution's FLOPs (2 * points * Cout * Cin/groups * kernel), as masked; flop_counter's
    grad-weight term ignores groups (torch_flops.DIFFERS). Reads grad_output plus what each
    gradient needs (weight for grad_input, input for grad_weight); writes the requested gradients."""
    g, x, w = call.input("grad_output"), call.input("input"), call.input("weight")
    mask = list(call.get("output_mask") or [True, True, True])
    transposed = bool(call.get("transposed", False))
    forward = conv_flop_count(list(x.shape), list(w.shape), list(g.shape), transposed)
    flops = forward * (int(bool(mask[0])) + int(bool(mask[1])))
    reads = [g, w if mask[0] else None, x if mask[1] else None]
    out_channels = g.shape[1]
    written = ((x.nbytes if mask[0] else 0) + (w.nbytes if mask[1] else 0)
               + (out_channels * g.itemsize if len(mask) > 2 and mask[2] else 0))
    read = unique_read_bytes(t for t in reads if t is not None)
    return OpCost(float(flops), float(read + written), "conv", x.dtype,
                  "convolution backward: one forward's FLOPs per requested gradient (groups counted)")
