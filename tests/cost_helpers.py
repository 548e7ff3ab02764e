"""Shared helpers for the cost-formula tests: build TensorArgs and ask the registry."""

from __future__ import annotations

from rooflinectl.costs import OpCall, OpCost, TensorArg, explain_cost
from rooflinectl.costs.signature import signature_of

ITEMSIZE = {"fp64": 8, "fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1, "int32": 4, "int64": 8,
            "bool": 1, "uint8": 1}


def T(*shape: int, dtype: str = "fp32", strides: tuple[int, ...] | None = None,
      storage: int | None = None) -> TensorArg:
    """A recorded tensor input: shape, dtype (short name), optional strides and identity."""
    return TensorArg(tuple(shape), dtype, ITEMSIZE[dtype], strides, storage)


def cost(name: str, *args: object) -> OpCost:
    """The registry's cost for one call; fails the test when the formula gives none."""
    result, why = explain_cost(OpCall(name, tuple(args)))
    assert result is not None, f"{name} gave no cost: {why}"
    return result


def named(key: str, /, **arguments: object) -> OpCall:
    """A call of one overload ("aten::max.other"; no overload: the default one) with arguments
    given by schema name; the others take their schema default or None (not recorded)."""
    op, _, overload = key.partition(".")
    signature = signature_of(op, overload or "default")
    assert signature is not None, f"torch has no {key}"
    unknown = set(arguments) - set(signature.names)
    assert not unknown, f"{key} has no argument {unknown}"
    args = tuple(arguments[n] if n in arguments else signature.defaults.get(n) for n in signature.names)
    return OpCall(op, args, signature=signature)


def named_cost(key: str, /, **arguments: object) -> OpCost:
    """The registry's cost for a call built by `named`; fails the test when there is none."""
    result, why = explain_cost(named(key, **arguments))
    assert result is not None, f"{key} gave no cost: {why}"
    return result
