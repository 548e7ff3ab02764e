"""What the cost model knows of one op call: its inputs as the profiler recorded them.

The profiler gives, per CPU op: input dims, strides, type names, concrete scalar/list values,
and (through its event tree) each tensor's identity (its TensorImpl pointer). No output metadata: formulas derive
output shapes from the inputs (broadcasting, reduced dims, matmul rules).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rooflinectl.costs.signature import Signature

# Profiler type names ("Input type") -> (short dtype name, bytes per element).
PROFILER_DTYPES: dict[str, tuple[str, int]] = {
    "float": ("fp32", 4),
    "double": ("fp64", 8),
    "c10::Half": ("fp16", 2),
    "c10::BFloat16": ("bf16", 2),
    "c10::Float8_e4m3fn": ("fp8", 1),
    "c10::Float8_e5m2": ("fp8", 1),
    "c10::Float8_e4m3fnuz": ("fp8", 1),
    "c10::Float8_e5m2fnuz": ("fp8", 1),
    "c10::Float8_e8m0fnu": ("fp8", 1),
    "c10::Float4_e2m1fn_x2": ("fp4x2", 1),
    "long int": ("int64", 8),
    "long unsigned int": ("uint64", 8),
    "int": ("int32", 4),
    "unsigned int": ("uint32", 4),
    "unsigned short": ("uint16", 2),
    "short int": ("int16", 2),
    "signed char": ("int8", 1),
    "unsigned char": ("uint8", 1),
    "bool": ("bool", 1),
    "c10::complex<float>": ("complex64", 8),
    "c10::complex<double>": ("complex128", 16),
    "c10::complex<c10::Half>": ("complex32", 4),
}

# torch.dtype names (str(torch.float32) without "torch.") -> short names, for the event tree.
TORCH_DTYPES: dict[str, tuple[str, int]] = {
    "float32": ("fp32", 4),
    "float64": ("fp64", 8),
    "float16": ("fp16", 2),
    "bfloat16": ("bf16", 2),
    "float8_e4m3fn": ("fp8", 1),
    "float8_e5m2": ("fp8", 1),
    "float8_e4m3fnuz": ("fp8", 1),
    "float8_e5m2fnuz": ("fp8", 1),
    "int64": ("int64", 8),
    "int32": ("int32", 4),
    "int16": ("int16", 2),
    "int8": ("int8", 1),
    "uint8": ("uint8", 1),
    "bool": ("bool", 1),
    "complex64": ("complex64", 8),
    "complex128": ("complex128", 16),
}

# Bytes per element of every name the table's `dtype` and `precision` columns use: the short dtype
# names (fp32, int64), torch's (float32), and the precisions that are no dtype (tf32 computes on
# fp32 data; "int", integer work, is taken as int64).
ELEMENT_BYTES: dict[str, int] = {
    **{short: size for short, size in (*PROFILER_DTYPES.values(), *TORCH_DTYPES.values())},
    **{name: size for name, (_, size) in TORCH_DTYPES.items()},
    "tf32": 4, "int": 8,
}

# c10::ScalarType codes as they appear in "Concrete Inputs" for dtype arguments.
SCALAR_TYPE_CODES: dict[int, tuple[str, int]] = {
    0: ("uint8", 1), 1: ("int8", 1), 2: ("int16", 2), 3: ("int32", 4), 4: ("int64", 8),
    5: ("fp16", 2), 6: ("fp32", 4), 7: ("fp64", 8), 11: ("bool", 1), 15: ("bf16", 2),
    23: ("fp8", 1), 24: ("fp8", 1),
}

FLOAT_DTYPES = ("fp64", "fp32", "fp16", "bf16", "fp8")

UNKNOWN_DTYPE: tuple[str, int] = ("unknown", 0)
"""A tensor whose dtype the trace does not give (tensor-list elements in a bare Chrome trace):
no formula costs a call holding one (registry.explain_cost says why)."""


@dataclass(frozen=True)
class TensorArg:
    """One tensor input of a recorded op, reduced to what the cost formulas need: shape, dtype,
    element size, strides and storage identity (shared storage is read once)."""

    shape: tuple[int, ...]
    dtype: str  # short name: fp32, bf16, int64, ...
    itemsize: int
    strides: tuple[int, ...] | None = None
    storage: int | None = None  # tensor identity (TensorImpl pointer), when the profiler gave it

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.numel * self.itemsize

    def footprint_bytes(self) -> int:
        """Bytes of storage the tensor spans: a broadcast (stride 0) view reads its source once.

        Approximation: 1 + sum((size - 1) * |stride|) elements, capped at numel; a strided slice
        is counted at numel (the minimum), not at the cache lines it touches.
        """
        if self.numel == 0:
            return 0
        if not self.strides or len(self.strides) != len(self.shape):
            return self.nbytes
        span = 1 + sum((n - 1) * abs(s) for n, s in zip(self.shape, self.strides))
        return min(span, self.numel) * self.itemsize


@dataclass(frozen=True)
class OpCall:
    """One op as recorded: aten name, positional inputs (TensorArg, list, scalar or None) and the
    profiler's type name of each; `signature` names them once the call is bound to its overload
    (rooflinectl.costs.signature). Formulas read arguments by name: `call.get("groups")`."""

    name: str
    args: tuple[Any, ...]
    types: tuple[str, ...] = ()  # profiler type names ("c10::BFloat16", "Scalar", ...), when recorded
    signature: Signature | None = None
    hints: tuple[tuple[str, Any], ...] = ()  # what the trace shows beyond the inputs (attribution/calls.py)

    @property
    def overload(self) -> str:
        return self.signature.overload if self.signature else ""

    def tensors(self) -> list[TensorArg]:
        """Tensor inputs in order, tensor lists flattened."""
        return list(_flatten_tensors(self.args))

    def get(self, name: str, default: Any = None) -> Any:
        """The argument called `name` in the bound overload's schema: the recorded value, else the
        schema's default, else `default` (also when the call is not bound)."""
        sig = self.signature
        if sig is None or name not in sig.names:
            return default
        i = sig.names.index(name)
        value = self.args[i] if i < len(self.args) else sig.defaults.get(name)
        return default if value is None else value

    def input(self, name: str) -> TensorArg | None:
        """The tensor argument called `name`, None when absent (an optional tensor not given)."""
        value = self.get(name)
        return value if isinstance(value, TensorArg) else None

    def tensor_list(self, name: str) -> list[TensorArg]:
        value = self.get(name)
        return [t for t in value if isinstance(t, TensorArg)] if isinstance(value, (list, tuple)) else []

    def hint(self, name: str) -> Any:
        return next((value for key, value in self.hints if key == name), None)


def _flatten_tensors(values: Iterable[Any]) -> Iterator[TensorArg]:
    for value in values:
        if isinstance(value, TensorArg):
            yield value
        elif isinstance(value, (list, tuple)):
            yield from _flatten_tensors(value)


def unique_read_bytes(tensors: Iterable[TensorArg]) -> int:
    """Bytes read when each tensor is read once: the same tensor passed twice counts once."""
    by_storage: dict[Any, int] = {}
    for i, t in enumerate(tensors):
        key = t.storage if t.storage else ("anon", i)
        by_storage[key] = max(by_storage.get(key, 0), t.footprint_bytes())
    return sum(by_storage.values())


def broadcast_shape(shapes: Iterable[tuple[int, ...]]) -> tuple[int, ...]:
    """NumPy broadcasting of shapes (the profiler gives inputs only; outputs follow from them)."""
    shapes = list(shapes)
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for shape in shapes:
        for i, n in enumerate(shape):
            j = ndim - len(shape) + i
            if n != 1:
                out[j] = n
    return tuple(out)


def is_float(dtype: str) -> bool:
    return dtype in FLOAT_DTYPES


def out_itemsize(call: OpCall, default: int, argument: str = "out_dtype") -> int:
    """Bytes per element of an output whose dtype an argument may set (a ScalarType code)."""
    code = call.get(argument)
    if isinstance(code, int) and not isinstance(code, bool) and code in SCALAR_TYPE_CODES:
        return SCALAR_TYPE_CODES[code][1]
    return default
