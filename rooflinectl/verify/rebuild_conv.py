"""Convolutions rebuilt from the kernel table: the input and weight shapes of `shapes`, the
arguments of `op_args` (stride, padding, dilation, transposed, output padding, groups, the
input's memory format; attribution/op_args.py) and the row's dtype, as profiled and with a fix:
channels padded to the finding's sizes (gemm.alignment), or TF32 switched on (precision.fp32-matmul).

A forward row (aten::convolution, cudnn_convolution, mkldnn_convolution, ...) is rebuilt as
torch.ops.aten.convolution, which dispatches to the same backend op, with a bias when the profiled
op had one; a backward row as torch.ops.aten.convolution_backward with the gradients its
output_mask asked for. Tensors are fresh random ones in the profiled memory format (weight and
gradient in the input's; a layout the trace did not show as contiguous or channels_last is
rebuilt contiguous). cuDNN's TF32 switch follows the row's precision (tf32: on) during each call.
Padded channels are timed on tensors already padded: the copy that pads a model's input (F.pad)
is not in the time, as the GEMM rebuild times the padded product alone. Rows of one convolution
(the kernels one call launched: cuDNN's own padding or transposition kernels beside the main one)
are one trial, on their summed time. Not rebuilt: a profile without op_args (written before it
was kept, or from a trace without Concrete Inputs), transposed convolutions padded (their weight
is [C_in, C_out / groups, ...]; the rule names channels from a forward's weight), grouped ones.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd
import torch

from rooflinectl.analysis.advice.common import cell_float, cell_text, parse_shapes
from rooflinectl.analysis.advice.rules_gemm import Misaligned
from rooflinectl.costs.conv import conv_out_shape
from rooflinectl.verify import tensors
from rooflinectl.verify.registry import NotRebuilt, Pair, Trial

BACKWARD = "aten::convolution_backward"
NO_ARGS = ("the profile keeps no stride or padding for this convolution (op_args is empty: a profile written "
           "before rooflinectl kept them, or a trace without Concrete Inputs); profile it again to verify")


@dataclass(frozen=True)
class ConvCase:
    """One convolution as the profile recorded it."""

    op: str
    x: tuple[int, ...]  # input [N, C_in, ...]
    w: tuple[int, ...]  # weight [C_out, C_in / groups, ...]
    args: dict[str, Any]  # op_args: stride, padding, dilation, output_padding, transposed, groups, memory_format
    bias: bool = False  # a forward op given a bias
    grad: tuple[int, ...] | None = None  # a backward op's grad_output [N, C_out, ...]

    def out_shape(self) -> tuple[int, ...]:
        a = self.args
        return conv_out_shape(self.x, self.w, a["stride"], a["padding"], a["dilation"], a["transposed"],
                              a["output_padding"], a["groups"])

    def bytes_needed(self, dtype: torch.dtype) -> int:
        size = torch.empty((), dtype=dtype).element_size()
        grads = 2 * math.prod(self.x) + math.prod(self.w) if self.grad is not None else 0  # grad_input, grad_weight
        return (math.prod(self.x) + math.prod(self.w) + 2 * math.prod(self.out_shape()) + grads) * size


def conv_case(row: pd.Series) -> ConvCase:
    """The row's convolution; NotRebuilt when the profile does not say enough to build it."""
    text = cell_text(row, "op_args")
    if not text:
        raise NotRebuilt(NO_ARGS)
    try:
        args = json.loads(text)
    except ValueError:
        raise NotRebuilt(f"the row's op_args are not JSON: {text[:80]}") from None
    op = cell_text(row, "op")
    shapes = parse_shapes(cell_text(row, "shapes"))
    grad = None
    if op == BACKWARD:
        if len(shapes) < 3 or "output_mask" not in args:
            raise NotRebuilt(f"cannot read grad_output, input and weight from {op} {cell_text(row, 'shapes')}")
        grad, shapes = shapes[0], shapes[1:]
    if len(shapes) < 2 or len(shapes[0]) < 3 or len(shapes[0]) != len(shapes[1]):
        raise NotRebuilt(f"cannot read the input and weight of {op} from {cell_text(row, 'shapes')}")
    needed = ("stride", "padding", "dilation", "output_padding", "transposed", "groups")
    if any(name not in args for name in needed):
        raise NotRebuilt(f"op_args lack {', '.join(n for n in needed if n not in args)}")
    bias = grad is None and len(shapes) > 2 and len(shapes[2]) == 1
    return ConvCase(op, shapes[0], shapes[1], args, bias, grad)


def padded_case(case: ConvCase, padded: dict[str, int]) -> ConvCase:
    """The convolution with C_in and C_out padded (zero channels: input and weight grow, and
    grad_output and a bias with C_out)."""
    if case.args["transposed"] or case.args["groups"] != 1:
        raise NotRebuilt("a transposed or grouped convolution is not rebuilt with padded channels")
    c_in, c_out = padded.get("C_in", case.x[1]), padded.get("C_out", case.w[0])
    args = dict(case.args)
    if case.grad is not None and any(args.get("bias_sizes") or []):
        args["bias_sizes"] = [c_out]
    grad = (case.grad[0], c_out, *case.grad[2:]) if case.grad is not None else None
    return replace(case, x=(case.x[0], c_in, *case.x[2:]), w=(c_out, c_in, *case.w[2:]), args=args, grad=grad)


def _tensor(shape: tuple[int, ...], dtype: torch.dtype, layout: str) -> torch.Tensor:
    t = tensors.random_tensor(*shape, dtype=dtype)
    if layout == "channels_last" and len(shape) in (4, 5):
        return t.contiguous(memory_format=torch.channels_last if len(shape) == 4 else torch.channels_last_3d)
    return t


def conv_call(case: ConvCase, dtype: torch.dtype, tf32: bool) -> Callable[[], Any]:
    """One call of the convolution on fresh tensors, with cuDNN's TF32 switch set to tf32 during it."""
    return with_cudnn_tf32(tf32, _conv(case, dtype))


def _conv(case: ConvCase, dtype: torch.dtype) -> Callable[[], Any]:
    a, layout = case.args, case.args.get("memory_format", "")
    x, w = _tensor(case.x, dtype, layout), _tensor(case.w, dtype, layout)
    lists = (a["stride"], a["padding"], a["dilation"], a["transposed"], a["output_padding"], a["groups"])
    if case.grad is None:
        bias = tensors.random_tensor(case.w[1] * a["groups"] if a["transposed"] else case.w[0], dtype=dtype) \
            if case.bias else None
        call = lambda: torch.ops.aten.convolution(x, w, bias, *lists)  # noqa: E731
    else:
        g = _tensor(case.grad, dtype, layout)
        sizes, mask = a.get("bias_sizes") or None, a["output_mask"]
        call = lambda: torch.ops.aten.convolution_backward(g, x, w, sizes, *lists, mask)  # noqa: E731
    return call


def with_cudnn_tf32(enabled: bool, call: Callable[[], Any]) -> Callable[[], Any]:
    def run() -> Any:
        before = torch.backends.cudnn.allow_tf32
        torch.backends.cudnn.allow_tf32 = enabled
        try:
            return call()
        finally:
            torch.backends.cudnn.allow_tf32 = before
    return run


def _by_conv(rows: list[pd.Series]) -> list[tuple[pd.Series, float]]:
    """The distinct convolutions among the rows (op, shapes, op_args, dtype, precision), first
    row of each with the summed time of all of its rows."""
    found: dict[tuple[str, ...], tuple[pd.Series, float]] = {}
    for row in rows:
        key = tuple(cell_text(row, c) for c in ("op", "shapes", "op_args", "dtype", "precision"))
        first, time_s = found.get(key, (row, 0.0))
        found[key] = (first, time_s + cell_float(row, "time_s", 0.0))
    return list(found.values())


def _label(case: ConvCase, row: pd.Series) -> str:
    a = case.args
    return (f"{case.op.split('::')[-1]} {cell_text(row, 'shapes')} stride {a['stride']} padding {a['padding']}"
            + (f" {a['memory_format']}" if a.get("memory_format") else ""))


def padded_convs(rows: list[tuple[pd.Series, Misaligned]]) -> list[Trial]:
    """Each distinct convolution among the rows as profiled and with its channels padded."""
    cases = {id(row): case for row, case in rows}
    trials = []
    for row, time_s in _by_conv([row for row, _ in rows]):
        misaligned = cases[id(row)]
        conv, dtype, tf32 = conv_case(row), tensors.dtype_of(row), cell_text(row, "precision") == "tf32"
        fixed = padded_case(conv, misaligned.padded)

        def make(conv: ConvCase = conv, fixed: ConvCase = fixed, dtype: torch.dtype = dtype, tf32: bool = tf32) -> Pair:
            return conv_call(conv, dtype, tf32), conv_call(fixed, dtype, tf32)

        padded = ", ".join(f"{k} {v} -> {misaligned.padded[k]}" for k, v in misaligned.dims.items())
        trials.append(Trial(f"{_label(conv, row)} with {padded}", make, time_s,
                            conv.bytes_needed(dtype) + fixed.bytes_needed(dtype)))
    return trials


def tf32_convs(rows: list[pd.Series]) -> list[Trial]:
    """Each distinct fp32 convolution among the rows with cuDNN's TF32 off (as profiled) and on."""
    trials = []
    for row, time_s in _by_conv(rows):
        conv = conv_case(row)

        def make(conv: ConvCase = conv) -> Pair:
            call = _conv(conv, torch.float32)  # one set of tensors, the switch apart
            return with_cudnn_tf32(False, call), with_cudnn_tf32(True, call)

        trials.append(Trial(f"{_label(conv, row)} fp32 with TF32", make, time_s, conv.bytes_needed(torch.float32)))
    return trials
