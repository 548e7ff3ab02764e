"""PyTorch's own FLOP formulas (torch.utils.flop_counter.flop_registry), by profiler op name.

We iterate the registry instead of picking its ops by hand: each op it knows is keyed by its
qualified name ("aten::mm", the name the profiler records), a higher-order op by its own name
(PROFILER_NAMES gives the name the profiler records for it, if any), and Triton JIT functions are
left out (no profiler op). tests/test_costs_registry.py checks that each has a formula of ours. Our formulas call `torch_flops` where flop_counter is right, and count for
themselves where it is not; DIFFERS says where and why, so the exceptions are written down once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch.utils import flop_counter

from rooflinectl.costs.tensors import OpCall, TensorArg


def _profiler_name(target: Any) -> str | None:
    """"aten::mm" for torch.ops.aten.mm (a packet) or an overload of it; higher-order ops
    (flex_attention) by their own name; None for Triton JIT functions (no profiler op)."""
    qualified = getattr(target, "_qualified_op_name", None)  # OpOverloadPacket
    if qualified is None and hasattr(target, "overloadpacket"):  # OpOverload
        qualified = target.overloadpacket._qualified_op_name
    if qualified is not None:
        return str(qualified)
    name = getattr(target, "name", None)
    if callable(name):
        name = name()
    return str(name) if isinstance(name, str) else None


def _iterate_registry() -> dict[str, Callable[..., int]]:
    found: dict[str, Callable[..., int]] = {}
    for target, formula in flop_counter.flop_registry.items():
        name = _profiler_name(target)
        if name is not None:
            found[name] = formula
    return found


TORCH_FLOP_FORMULAS: dict[str, Callable[..., int]] = _iterate_registry()
"""Op name ("aten::mm"; a higher-order op's own name, see PROFILER_NAMES) -> flop_counter's formula,
for every op flop_counter knows except Triton JIT functions."""

DIFFERS: dict[str, str] = {
    "aten::convolution_backward": "grad-weight FLOPs ignore `groups` (a depthwise conv's counted "
                                  "C times); we count grad-input and grad-weight as one forward each",
    "aten::cudnn_convolution": "reads the 7th argument (`benchmark` here) as `transposed`",
    "aten::_slow_conv2d_forward": "its arguments have no `transposed`: the formula raises TypeError",
    "attention": "causal masks (top-left or bottom-right), sliding windows and masked backward are "
                 "not accounted, GQA asserts on older torch, and _flash/_efficient_attention_forward/"
                 "backward read their (B, S, H, D) inputs as (B, H, S, D) (an AssertionError or a wrong "
                 "count); we count the visible (query, key) pairs (costs/attention.py)",
}
"""Where our formula does not take flop_counter's count, and why (attention covers every SDPA,
flash and efficient op, forward and backward)."""


PROFILER_NAMES: dict[str, str | None] = {
    "flex_attention": "FlexAttentionAutogradOp",  # eager: the autograd Function's record
    # eager backward runs as aten ops that carry their own costs; compiled flex attention runs
    # Inductor kernels that carry Inductor's counts: no op of this name reaches the profiler
    "flex_attention_backward": None,
}
"""flop_counter's higher-order ops, by the name the profiler records for them (None: none)."""


def _shape(value: Any) -> Any:
    if isinstance(value, TensorArg):
        return value.shape
    if isinstance(value, list):
        return [_shape(v) for v in value]
    return value


def torch_flops(call: OpCall, out_shape: Any = None) -> int:
    """flop_counter's count for this call: the schema's positional arguments in order and the rest
    by name, the output shape(s) as `out_val`; tensors as their shapes for formulas behind
    shape_wrapper, as TensorArgs (which have .shape) for the get_raw ones. A call whose arguments
    match no schema raises ValueError."""
    formula = TORCH_FLOP_FORMULAS[call.name]
    sig = call.signature
    if sig is None:
        raise ValueError(f"{call.name}: the recorded arguments match no schema")
    wrapped = hasattr(formula, "__wrapped__")  # shape_wrapper wants shapes; get_raw formulas read .shape
    values = [_shape(a) if wrapped else a for a in call.args]
    keywords = {name: value for name, value in zip(sig.names[sig.positional:], values[sig.positional:])}
    return int(formula(*values[:sig.positional], out_val=out_shape, **keywords))
