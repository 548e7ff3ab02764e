"""The cost-formula registry: one entry per aten op name, registered once by decorator.

A formula takes an OpCall (inputs as recorded) and returns an OpCost, or None when the call's
inputs do not let it say (then the kernel shows cost_source=none, never a silent zero).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rooflinectl.costs.tensors import OpCall

FAMILIES = ("gemm", "conv", "attention", "elementwise", "reduction", "norm", "softmax", "copy",
            "index", "loss", "optimizer", "other")


@dataclass(frozen=True)
class OpCost:
    """What one call of an op costs at the minimum, as a registered formula computes it from the
    call's shapes: attribution spreads it over the kernels the call launched."""

    flops: float  # FMA counted as 2
    bytes: float  # minimum traffic: inputs read once, outputs written once
    family: str
    dtype: str  # the dtype the math runs in (short name: bf16, fp32, ...)
    note: str  # which formula, and what it approximates


Formula = Callable[[OpCall], "OpCost | None"]


@dataclass(frozen=True)
class FormulaEntry:
    name: str
    family: str
    formula: Formula
    doc: str


_REGISTRY: dict[str, FormulaEntry] = {}


def cost_formula(*names: str, family: str) -> Callable[[Formula], Formula]:
    """Register `formula` for the aten ops `names` ("aten::add", ...); a duplicate is refused."""
    if family not in FAMILIES:
        raise ValueError(f"unknown op family {family!r}")

    def register(formula: Formula) -> Formula:
        for name in names:
            if name in _REGISTRY:
                raise ValueError(f"a cost formula for {name} is already registered")
            _REGISTRY[name] = FormulaEntry(name, family, formula, (formula.__doc__ or "").strip())
        return formula

    return register


def lookup(name: str) -> FormulaEntry | None:
    return _REGISTRY.get(name)


def registered_ops() -> dict[str, FormulaEntry]:
    return dict(_REGISTRY)


def cost_of(call: OpCall) -> OpCost | None:
    """The op's cost, or None if no formula is registered or the inputs do not fit it."""
    entry = _REGISTRY.get(call.name)
    if entry is None:
        return None
    try:
        return entry.formula(call)
    except (IndexError, TypeError, ValueError, AttributeError, ZeroDivisionError):
        # Inputs not of the shape the formula expects (an overload we do not model): unknown.
        return None
