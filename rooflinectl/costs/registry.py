"""The cost-formula registry: one entry per op or op overload, registered once by decorator.

Keys are "aten::name" (every overload of the op) or "aten::name.overload" (that overload only,
as in `torch.ops.aten.max.other`); a call is bound to its overload first (costs/signature.py)
and the overload's own entry wins over the op's. A formula takes the bound OpCall and returns
an OpCost, or None when the call's inputs do not let it say: then the kernel shows
cost_source=none with the reason, never a silent zero.

The formula modules (FORMULA_MODULES) register themselves when imported, and the registry
imports them at its first lookup, not when it is imported: they and the op schemas
(costs/signature.py) need torch, and `advise` and `plot` read this module's OpCost and the
torch-free costs.tensors without ever costing a call (torch was 0.85 s of their start-up on the
2-core machine).

An op with no entry whose namespace is not PyTorch's own (a `torch.library` op, a C++/CUDA
extension's op) falls back to its inputs and outputs: minimum bytes, FLOPs unknown
(costs/custom_ops.py). A formula registered for it wins.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable
from dataclasses import dataclass

from rooflinectl.costs.tensors import UNKNOWN_DTYPE, OpCall
from rooflinectl.schema import OP_FAMILIES

FAMILIES = OP_FAMILIES  # the profile file's vocabulary (schema.py), one list

# Why a call has no cost (the first words of the reason; show --unknown groups by them).
NO_FORMULA = "no cost formula"
FORMULA_RAISED = "formula raised"
INPUTS_UNFIT = "inputs not modelled"


class NotModelled(ValueError):
    """Raised by a formula whose op ran in a way it does not model; the message says how."""


@dataclass(frozen=True)
class OpCost:
    """What one call of an op costs at the minimum, as a registered formula computes it from the
    call's shapes: attribution spreads it over the kernels the call launched."""

    flops: float  # FMA counted as 2
    bytes: float  # minimum traffic: inputs read once, outputs written once
    family: str
    dtype: str  # the dtype the math runs in (short name: bf16, fp32, ...)
    note: str  # which formula, and what it approximates
    unit: str = ""  # "tensor" or "simt" when the cost says so (a Triton kernel's declaration);
    # "": attribution decides from the family, dtype and math modes
    min_bytes: float | None = None  # the op's minimum traffic when `bytes` counts what its kernels
    # execute (more passes, an upcast copy, a zero fill); None: `bytes` is the minimum

    @property
    def minimum_bytes(self) -> float:
        """The op's minimum traffic: min_bytes when bytes counts executed work, else bytes."""
        return self.bytes if self.min_bytes is None else self.min_bytes


Formula = Callable[[OpCall], "OpCost | None"]


@dataclass(frozen=True)
class FormulaEntry:
    name: str  # the registry key: "aten::max" or "aten::max.other"
    family: str
    formula: Formula
    doc: str


_REGISTRY: dict[str, FormulaEntry] = {}
_OPS: set[str] = set()  # op names ("aten::max") with an entry for the op or one of its overloads
# The modules of costs/ whose formulas register themselves (cost_formula) when imported.
FORMULA_MODULES = ("attention", "conv", "elementwise", "gemm", "memory_ops", "norms", "optimizer", "pooling",
                   "reductions")
_loaded = False


def _load_formulas() -> None:
    """Import the formula modules, once: each registers its formulas."""
    global _loaded
    if not _loaded:
        _loaded = True  # first: a formula module that looks an op up while importing must not recurse
        try:
            for module in FORMULA_MODULES:
                importlib.import_module(f"rooflinectl.costs.{module}")
        except BaseException:  # never a half-filled registry taken for a whole one: the next lookup tries again
            _loaded = False
            raise


def op_of(key: str) -> str:
    """The op a registry key belongs to: "aten::max.other" -> "aten::max"."""
    namespace, _, rest = key.partition("::")
    return f"{namespace}::{rest.split('.')[0]}"


def cost_formula(*names: str, family: str) -> Callable[[Formula], Formula]:
    """Register `formula` for the ops or overloads `names` ("aten::add", "aten::max.other");
    a duplicate key is refused."""
    if family not in FAMILIES:
        raise ValueError(f"unknown op family {family!r}")

    def register(formula: Formula) -> Formula:
        if not _loaded:  # ours first, as a duplicate of one of them is refused
            _load_formulas()
        for name in names:
            if name in _REGISTRY:
                raise ValueError(f"a cost formula for {name} is already registered")
        for name in names:
            _REGISTRY[name] = FormulaEntry(name, family, formula, (formula.__doc__ or "").strip())
            _OPS.add(op_of(name))
        return formula

    return register


def bound(call: OpCall) -> OpCall:
    """The call with its overload's signature, when one fits what was recorded."""
    if call.signature is not None:
        return call
    from rooflinectl.costs.signature import bind, recorded_kind  # torch: see the module doc

    kinds = tuple(recorded_kind(call.types[i] if i < len(call.types) else "", a) for i, a in enumerate(call.args))
    signature = bind(call.name, kinds)
    return dataclasses.replace(call, signature=signature) if signature else call


def lookup(name: str, overload: str = "") -> FormulaEntry | None:
    """The entry for this overload of the op, else the op's own entry."""
    if not _loaded:
        _load_formulas()
    if overload:
        entry = _REGISTRY.get(f"{name}.{overload}")
        if entry is not None:
            return entry
    return _REGISTRY.get(name)


def has_formula(name: str) -> bool:
    """Whether any overload of the op has a formula (the cheap test attribution makes per op)."""
    if not _loaded:
        _load_formulas()
    return name in _OPS or _is_custom_op(name)


def has_registered_formula(name: str) -> bool:
    """Whether a formula is registered for the op or one of its overloads (no fallback)."""
    if not _loaded:
        _load_formulas()
    return name in _OPS


def _is_custom_op(name: str) -> bool:
    from rooflinectl.costs.custom_ops import is_custom_op  # torch: see the module doc

    return is_custom_op(name)


def registered_ops() -> dict[str, FormulaEntry]:
    _load_formulas()
    return dict(_REGISTRY)


def explain_cost(call: OpCall) -> tuple[OpCost | None, str]:
    """(cost, "") or (None, why): no formula, the formula raised (flop_counter asserts on shapes
    it does not support, for example), or the inputs are not what the formula models."""
    from rooflinectl.costs.signature import has_schema  # torch: see the module doc

    call = bound(call)
    entry = lookup(call.name, call.overload)
    if entry is None and _is_custom_op(call.name):
        return _custom_op_cost(call)
    if entry is None:
        return None, f"{NO_FORMULA} for {call.name}" + (f".{call.overload}" if call.overload else "")
    if call.signature is None and has_schema(call.name):
        return None, f"{INPUTS_UNFIT}: no schema of {call.name} matches the recorded inputs"
    if any(t.dtype == UNKNOWN_DTYPE[0] for t in call.tensors()):
        return None, f"{INPUTS_UNFIT}: the trace records no dtype for tensor-list elements (rooflinectl's capture does)"
    try:
        cost = entry.formula(call)
    except NotModelled as exc:
        return None, f"{INPUTS_UNFIT} by the {entry.name} formula: {exc}"
    except Exception as exc:  # noqa: BLE001 - one op's formula must never abort a profile
        return None, f"{FORMULA_RAISED} {type(exc).__name__}: {exc}"[:200]
    if cost is None:
        return None, f"{INPUTS_UNFIT} by the {entry.name} formula: {call.name}.{call.overload}"
    return cost, ""


def _custom_op_cost(call: OpCall) -> tuple[OpCost | None, str]:
    """The fallback for a user's op (costs/custom_ops.py), or why it gives none."""
    from rooflinectl.costs.custom_ops import custom_op_cost

    try:
        cost = custom_op_cost(call)
    except Exception as exc:  # noqa: BLE001 - one op's fallback must never abort a profile
        return None, f"{FORMULA_RAISED} {type(exc).__name__}: {exc}"[:200]
    return (cost, "") if cost is not None else (None, f"{INPUTS_UNFIT}: custom op {call.name} with no tensor input")


def cost_of(call: OpCall) -> OpCost | None:
    """The op's cost, or None if no formula is registered or the inputs do not fit it."""
    return explain_cost(call)[0]
