"""The scalar arguments a verifier needs to rebuild an op, kept in the kernel table's `op_args`.

The table's `shapes` keep an op's tensor inputs; a convolution also needs its stride, padding,
dilation, transposition, output padding and groups, which the profiler records as the op's
"Concrete Inputs" (capture/read keeps them in RawOp.concrete_inputs). They are read here by
argument name, through the op's schema (costs.bound), so aten::cudnn_convolution's
(self, weight, padding, stride, ...) and aten::convolution's (input, weight, bias, stride, ...)
give the same keys. The text is a JSON object with sorted keys, e.g.
{"dilation": [1, 1], "groups": 1, "memory_format": "contiguous", "output_padding": [0, 0],
"padding": [0, 0], "stride": [16, 16], "transposed": false}; '' for other ops and when an
argument was not recorded (a trace without concrete inputs): never a schema's default, which
would rebuild a different convolution.
"""

from __future__ import annotations

import json
import math
from typing import Any

from rooflinectl.costs import OpCall, OpCost, TensorArg, bound

CONV_LISTS = ("stride", "padding", "dilation", "output_padding")  # one entry per spatial dimension
TRANSPOSED_OPS = ("aten::cudnn_convolution_transpose", "aten::slow_conv_transpose2d", "aten::slow_conv_transpose3d")
BACKWARD = "aten::convolution_backward"  # also keeps which gradients it computed and the bias's size


def op_args_text(call: OpCall, cost: OpCost | None) -> str:
    """The `op_args` of a costed call: a convolution's arguments as JSON text, '' otherwise."""
    if cost is None or cost.family != "conv":
        return ""
    args = conv_args(bound(call))
    return json.dumps(args, sort_keys=True) if args is not None else ""


def _recorded(call: OpCall, name: str) -> Any:
    """The argument as recorded, None when the schema has no such argument or the trace no value."""
    sig = call.signature
    if sig is None or name not in sig.names:
        return None
    i = sig.names.index(name)
    return call.args[i] if i < len(call.args) else None


def _per_dim(value: Any, dims: int) -> list[int] | None:
    """A per-dimension list of `dims` ints from a recorded list (one value stands for every dimension)."""
    if isinstance(value, bool) or not isinstance(value, (int, list, tuple)):
        return None
    values = [value] if isinstance(value, int) else list(value)
    if not values or not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return None
    return [int(v) for v in values] * dims if len(values) == 1 else [int(v) for v in values][:dims]


def conv_args(call: OpCall) -> dict[str, Any] | None:
    """stride, padding, dilation, output_padding (per spatial dimension), transposed, groups and
    the activation's memory_format of a bound convolution call; None when one was not recorded.
    Ops whose schema has no dilation, output padding or groups (the native fallback kernels,
    cudnn's non-transposed forward) use the values those ops imply."""
    backward = call.name == BACKWARD
    x = call.input("input" if backward or call.input("self") is None else "self")
    w = call.input("weight")
    if x is None or w is None or len(x.shape) < 3 or len(w.shape) != len(x.shape):
        return None
    dims = len(x.shape) - 2
    transposed = _recorded(call, "transposed")
    if transposed is None:
        transposed = call.name in TRANSPOSED_OPS
    defaults = {"dilation": 1, "output_padding": 0}  # an op without the argument runs with this
    found: dict[str, Any] = {"transposed": bool(transposed)}
    for name in CONV_LISTS:
        value = _recorded(call, name)
        if value is None and call.signature is not None and name not in call.signature.names and name in defaults:
            value = defaults[name]
        found[name] = _per_dim(value, dims)
        if found[name] is None:
            return None
    groups = _recorded(call, "groups")
    if groups is None and call.signature is not None and "groups" not in call.signature.names:
        groups = 1 if transposed or w.shape[1] <= 0 else x.shape[1] // w.shape[1]  # the weight implies them
    if not isinstance(groups, int) or isinstance(groups, bool) or groups < 1:
        return None
    found["groups"] = int(groups)
    found["memory_format"] = memory_format(x)
    if backward:
        mask, bias = _recorded(call, "output_mask"), _recorded(call, "bias_sizes")
        if not isinstance(mask, list) or not isinstance(bias, list):
            return None
        found.update(output_mask=[bool(m) for m in mask], bias_sizes=[int(b) for b in bias])
    return found


def memory_format(t: TensorArg) -> str:
    """contiguous, channels_last (NHWC / NDHWC order of strides: torch's channels_last and
    channels_last_3d) or '' (another layout, or no strides)."""
    if t.strides is None or len(t.strides) != len(t.shape):
        return ""
    if t.strides == _contiguous(t.shape):
        return "contiguous"
    if len(t.shape) not in (4, 5):
        return ""
    order = (0, *range(2, len(t.shape)), 1)  # N, spatial..., C: innermost last
    last = _contiguous(tuple(t.shape[i] for i in order))
    expected = [0] * len(t.shape)
    for position, dim in enumerate(order):
        expected[dim] = last[position]
    return "channels_last" if tuple(expected) == t.strides else ""


def _contiguous(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(math.prod(shape[i + 1:]) for i in range(len(shape)))
