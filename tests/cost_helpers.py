"""Shared helpers for the cost-formula tests: build TensorArgs and ask the registry."""

from __future__ import annotations

from rooflinectl.costs import OpCall, OpCost, TensorArg, cost_of

ITEMSIZE = {"fp64": 8, "fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1, "int32": 4, "int64": 8,
            "bool": 1}


def T(*shape: int, dtype: str = "fp32", strides: tuple[int, ...] | None = None,
      storage: int | None = None) -> TensorArg:
    """A recorded tensor input: shape, dtype (short name), optional strides and identity."""
    return TensorArg(tuple(shape), dtype, ITEMSIZE[dtype], strides, storage)


def cost(name: str, *args: object) -> OpCost:
    """The registry's cost for one call; fails the test when the formula gives none."""
    result = cost_of(OpCall(name, tuple(args)))
    assert result is not None, f"{name} gave no cost"
    return result
