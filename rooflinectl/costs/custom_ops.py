"""The registry's fallback for a user's own ops: `torch.library` ops and C++/CUDA extension ops
called through the dispatcher ("mylib::fused_add"), costed from their inputs and outputs.

A custom op has no formula of ours, but the dispatcher knows its schema, the trace records its
inputs, and the op's fake (meta) implementation, which torch.compile requires of a custom op
(`torch.library.register_fake`, or a C++ Meta kernel), gives its outputs' shapes. The minimum
traffic is then exact: every input read once (shared storage once, a view by the bytes it spans)
and every new output written once; an output that aliases an input (an in-place or out= op, by
its schema) is counted with that input. FLOPs are unknown (NaN) unless the user registers a
formula with `cost_formula` (docs/custom-kernels.md), which wins over this fallback; with NaN
FLOPs the op is held to the memory roof and its efficiency is a lower bound (analysis/roofline.py).
Without a fake implementation the outputs are not known: the bytes are the inputs' alone and the
note says so.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from typing import Any

import torch

from rooflinectl.costs.registry import OpCost
from rooflinectl.costs.tensors import TORCH_DTYPES, OpCall, TensorArg, unique_read_bytes

# Namespaces of PyTorch's own ops and profiler scopes: not a user's op.
BUILTIN_NAMESPACES = frozenset({
    "aten", "prim", "prims", "debugprims", "c10d", "_c10d_functional", "c10d_functional", "_c10d_functional_autograd",
    "_dtensor", "symm_mem", "profiler", "autograd", "inductor", "_inductor", "higher_order", "mkldnn", "onednn",
    "quantized", "_quantized", "quantized_decomposed", "sparse", "cudnn", "miopen", "cuda", "mps", "xpu", "_test",
    "rooflinectl"})
_OP_NAME = re.compile(r"([A-Za-z_]\w*)::([A-Za-z_]\w*)")
_SHORT_OF_TORCH = {getattr(torch, name): short for name, (short, _) in TORCH_DTYPES.items() if hasattr(torch, name)}
_TORCH_OF_SHORT = {short: dtype for dtype, short in reversed(list(_SHORT_OF_TORCH.items()))}
NOTE = ("custom op: minimum bytes from its inputs and outputs (each read or written once); FLOPs unknown: "
        "register a formula with rooflinectl.costs.cost_formula")


@lru_cache(maxsize=4096)
def is_custom_op(name: str) -> bool:
    """Whether `name` ("mylib::fused_add") is an op the dispatcher knows outside PyTorch's own."""
    match = _OP_NAME.fullmatch(name)
    if match is None or match.group(1) in BUILTIN_NAMESPACES:
        return False
    try:
        return bool(getattr(getattr(torch.ops, match.group(1)), match.group(2)).overloads())
    except (AttributeError, RuntimeError):
        return False


def costed_by_fallback(name: str) -> bool:
    """A user's op with no registered formula: its cost is this module's minimum, no FLOPs."""
    from rooflinectl.costs.registry import has_registered_formula

    return is_custom_op(name) and not has_registered_formula(name)


def custom_op_cost(call: OpCall) -> OpCost | None:
    """The op's minimum bytes (inputs, plus new outputs from its fake implementation), NaN FLOPs."""
    tensors = call.tensors()
    if not tensors:
        return None
    read_bytes = unique_read_bytes(tensors)
    outputs = _output_bytes(call)
    dtype = max(tensors, key=lambda t: t.nbytes).dtype
    if outputs is None:
        return OpCost(math.nan, float(read_bytes), "other", dtype,
                      NOTE + "; outputs not counted: the op has no fake (meta) implementation")
    return OpCost(math.nan, float(read_bytes + outputs), "other", dtype, NOTE)


def _output_bytes(call: OpCall) -> int | None:
    """Bytes of the outputs that alias no input, from the op's fake implementation on meta
    tensors of the recorded shapes; None when it cannot run."""
    overload = _overload(call)
    if overload is None:
        return None
    args = [_meta(a) for a in call.args]
    if any(a is _UNUSABLE for a in args):
        return None
    try:
        out = overload(*args)
    except Exception:  # noqa: BLE001 - no Meta kernel, or arguments the trace did not record
        return None
    returns = out if isinstance(out, (tuple, list)) else (out,)
    aliased = [r.alias_info is not None for r in overload._schema.returns]
    fresh = [r for r, alias in zip(returns, aliased + [False] * len(returns)) if isinstance(r, torch.Tensor)
             and not alias]
    return sum(r.numel() * r.element_size() for r in fresh)


def _overload(call: OpCall) -> Any:
    namespace, _, name = call.name.partition("::")
    try:
        packet = getattr(getattr(torch.ops, namespace), name)
        return getattr(packet, call.overload or "default")
    except (AttributeError, RuntimeError):
        return None


_UNUSABLE = object()


def _meta(value: Any) -> Any:
    """A recorded argument as the fake implementation takes it: tensors on the meta device."""
    if isinstance(value, TensorArg):
        dtype = _TORCH_OF_SHORT.get(value.dtype)
        if dtype is None:
            return _UNUSABLE
        if value.strides and len(value.strides) == len(value.shape):
            return torch.empty_strided(value.shape, value.strides, dtype=dtype, device="meta")
        return torch.empty(value.shape, dtype=dtype, device="meta")
    if isinstance(value, (list, tuple)):
        items = [_meta(v) for v in value]
        return _UNUSABLE if any(i is _UNUSABLE for i in items) else type(value)(items)
    return value
