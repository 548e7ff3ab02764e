"""Name a recorded op's positional inputs from its schema: which overload ran, and what each
argument is called.

The profiler records an op by its packet name ("aten::max") and one entry per schema argument,
positional and keyword-only alike, with a type name ("c10::BFloat16", "Scalar", "ScalarList",
"TensorList", or "" for None and for types it does not record such as Device or str). The
schema of each overload (`torch.ops.aten.max.other._schema`) names the arguments; we pick the
overload whose arity and argument kinds fit what was recorded, so formulas read `groups` or
`is_causal` by name instead of by position, and `aten::max.other` (element-wise) is told apart
from `aten::max.dim` (a reduction).

Ties (max.other and max.unary_out both take two tensors) go to the overload that writes no
`out=` argument, then to the schema's own order. A recording with fewer arguments than the
schema (a trace from an older torch) still binds when the missing trailing arguments have
defaults; `OpCall.get` then returns the default.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Any

import torch

from rooflinectl.costs.tensors import PROFILER_DTYPES, TensorArg

# What a recorded input is, as far as matching a schema goes.
TENSOR, TENSOR_LIST, SCALAR, SCALAR_LIST, EMPTY_LIST, NONE, OTHER, UNKNOWN_TYPE = (
    "tensor", "tensor_list", "scalar", "scalar_list", "empty_list", "none", "other", "unknown_type")

_SCALAR_KINDS = {"IntType", "SymIntType", "FloatType", "BoolType", "NumberType", "ComplexType"}


@dataclass(frozen=True)
class Signature:
    """One overload's argument names, defaults and the arguments it writes (out=, in-place self)."""

    op: str  # "aten::max"
    overload: str  # "other", "default", ...
    names: tuple[str, ...]
    defaults: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    written: frozenset[str] = frozenset()  # arguments the op writes: out= tensors and in-place self
    out_only: frozenset[str] = frozenset()  # written and keyword-only: pure outputs, never read
    positional: int = 0  # arguments before the keyword-only ones


def recorded_kind(type_name: str, value: Any) -> str:
    """The kind of one recorded input, from the profiler's type name when there is one, else from
    the value (a hand-built OpCall in tests)."""
    if type_name:
        if type_name in PROFILER_DTYPES:
            return TENSOR
        return {"TensorList": TENSOR_LIST, "Scalar": SCALAR, "ScalarList": SCALAR_LIST}.get(type_name, UNKNOWN_TYPE)
    if value is None:
        return NONE
    if isinstance(value, TensorArg):
        return TENSOR
    if isinstance(value, (list, tuple)):
        if not value:
            return EMPTY_LIST
        if any(isinstance(v, TensorArg) or v is None for v in value):
            return TENSOR_LIST
        return SCALAR_LIST
    if isinstance(value, (bool, int, float, complex)):
        return SCALAR
    return OTHER


def _accepts(schema_type: Any, kind: str) -> int:
    """2: the kind is what the argument expects; 1: acceptable (None for an optional or an
    unrecorded type); 0: impossible."""
    k = schema_type.kind()
    optional = k == "OptionalType"
    if optional:
        schema_type = schema_type.getElementType()
        k = schema_type.kind()
    if kind in (NONE, UNKNOWN_TYPE):
        # "" is None, an undefined tensor, or a type the profiler does not record (Device, str...);
        # a type name we do not know may be a tensor of a dtype we do not list
        return 1
    if k == "TensorType":
        return 2 if kind == TENSOR else 0
    if k == "ListType":
        if kind == EMPTY_LIST:
            return 1
        inner = schema_type.getElementType().kind()
        if inner == "OptionalType":
            inner = schema_type.getElementType().getElementType().kind()
        if inner == "TensorType":
            return 2 if kind == TENSOR_LIST else 0
        if inner in _SCALAR_KINDS:
            return 2 if kind == SCALAR_LIST else 0
        return 1 if kind == OTHER else 0
    if k in _SCALAR_KINDS:
        return 2 if kind == SCALAR else 0
    return 1 if kind in (OTHER, SCALAR) else 0  # Device, str, Generator, Layout... as recorded


def _default(argument: Any) -> Any:
    value = argument.default_value
    return list(value) if isinstance(value, tuple) else value


@cache
def _overloads(op: str) -> tuple[tuple[str, Any], ...]:
    """(overload name, schema) of an aten op, in the schema's order; () for anything else."""
    namespace, _, name = op.partition("::")
    if not name:
        return ()
    try:
        packet = getattr(getattr(torch.ops, namespace), name)
        names = packet.overloads()
    except (AttributeError, RuntimeError):
        return ()
    found = []
    for overload in names:
        try:
            found.append((overload, getattr(packet, overload)._schema))
        except (AttributeError, RuntimeError):
            continue
    return tuple(found)


def _signature(op: str, overload: str, schema: Any) -> Signature:
    arguments = list(schema.arguments)
    written = frozenset(a.name for a in arguments if a.alias_info is not None and a.alias_info.is_write)
    return Signature(op, overload, tuple(a.name for a in arguments),
                     {a.name: _default(a) for a in arguments if a.has_default_value()}, written,
                     frozenset(a.name for a in arguments if a.name in written and a.kwarg_only),
                     sum(1 for a in arguments if not a.kwarg_only))


def has_schema(op: str) -> bool:
    """Whether torch knows the op (then an unbound call means the recording fits none of its overloads)."""
    return bool(_overloads(op))


def signature_of(op: str, overload: str = "default") -> Signature | None:
    """The signature of one named overload ("aten::max", "other"), None if torch has no such one."""
    return next((_signature(op, name, schema) for name, schema in _overloads(op) if name == overload), None)


@cache
def bind(op: str, kinds: tuple[str, ...]) -> Signature | None:
    """The overload of `op` that fits the recorded argument kinds best, or None."""
    best: tuple[tuple[Any, ...], str, Any] | None = None
    for position, (overload, schema) in enumerate(_overloads(op)):
        arguments = list(schema.arguments)
        if len(kinds) > len(arguments):
            continue
        if any(not a.has_default_value() for a in arguments[len(kinds):]):
            continue
        scores = [_accepts(a.type, kind) for a, kind in zip(arguments, kinds)]
        if 0 in scores:
            continue
        writes_out = any(a.kwarg_only and a.alias_info is not None and a.alias_info.is_write for a in arguments)
        rank = (len(arguments) == len(kinds), sum(scores), not writes_out, -position)
        if best is None or rank > best[0]:
            best = (rank, overload, schema)
    return _signature(op, best[1], best[2]) if best else None
