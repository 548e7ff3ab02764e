"""The minimum bytes of an undeclared Triton launch, from the tensors it was given.

A Triton kernel written as in Triton's tutorials declares no cost. What its launch does show is
its arguments: each tensor argument is read or written at least once (a kernel that touched none
of a tensor's bytes would not need it), so the bytes the arguments' views span are a floor on the
kernel's DRAM traffic. Per argument the view's span counts, not its whole storage: from its first
element to its last (a strided view spans its gaps too: a strided kernel moves whole 32-byte
sectors anyway). Tensors that share memory count once: the spans are merged by address, so an
output written in place over an input, or two views of one buffer, are one span. Scalars and
constexprs count nothing. Tuples of tensors (Triton 3 takes them) are opened one level deep.

Triton hands a launch's arguments to `CompiledKernel.launch_metadata(grid, stream, *args)`, and the
launch-enter hook (capture/run/triton_hook.py) only the lazy dict that builds: while recording we wrap
that method so an undeclared kernel's dict gets `bytes` (and the arguments' shapes and widest
dtype) too, computed once per launch. Kernels named triton_* are Inductor's (costed from its own
annotations) and kernels with a launch_metadata function declare their own cost: both are left
as they are. The wrapper is removed when recording stops. Per launch it costs a few microseconds
(tests/test_triton_args.py measures it; docs/custom-kernels.md has the figure).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import torch

from rooflinectl.capture.run.triton_hook import FROM_ARGUMENTS

INDUCTOR_PREFIX = "triton_"  # Inductor's kernels: costed from Inductor's own annotations
_SHORT_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "float64": "fp64",
                 "float8_e4m3fn": "fp8", "float8_e5m2": "fp8"}
_SHORT_NAMES: dict[torch.dtype, str] = {}  # per dtype object, made once


_SCALARS = frozenset({int, float, bool, str, type(None)})  # skipped first: isinstance(x, Tensor) is slow for them


def _tensors(args: Iterable[Any]) -> Iterator[torch.Tensor]:
    for a in args:
        if type(a) in _SCALARS:
            continue
        if isinstance(a, torch.Tensor):
            yield a
        elif isinstance(a, (tuple, list)):
            yield from (t for t in a if isinstance(t, torch.Tensor))
        else:
            base = getattr(a, "base", None)  # a host-side TensorDescriptor (TMA) wraps its tensor
            if isinstance(base, torch.Tensor):
                yield base


def tensor_span(t: torch.Tensor) -> tuple[int, int] | None:
    """[first byte, one past the last byte) of the memory the view spans; None when empty."""
    start = t.data_ptr()
    if t.is_contiguous():
        size = t.nbytes
        return (start, start + size) if size else None
    if t.numel() == 0:
        return None
    elements = 1 + sum([(size - 1) * abs(stride) for size, stride in zip(t.shape, t.stride())])
    return start, start + elements * t.element_size()


def argument_bytes(args: Iterable[Any]) -> tuple[int, list[tuple[int, ...]], str]:
    """(bytes the tensor arguments span, counting shared memory once; their shapes; the dtype of
    the argument with the most bytes, short name). (0, [], "") when no tensor was passed.
    Runs once per launch: one pass, contiguous tensors without a stride walk."""
    spans: list[tuple[int, int]] = []
    shapes: list[tuple[int, ...]] = []
    widest: torch.dtype | None = None
    widest_bytes = -1
    for t in _tensors(args):
        shapes.append(t.shape)
        if t.is_contiguous():
            start, size = t.data_ptr(), t.nbytes
            if not size:
                continue
            span = (start, start + size)
        else:
            found = tensor_span(t)
            if found is None:
                continue
            span, size = found, found[1] - found[0]
        spans.append(span)
        if size > widest_bytes:
            widest_bytes, widest = size, t.dtype
    total = spans[0][1] - spans[0][0] if len(spans) == 1 else _union_bytes(spans)
    return total, shapes, _short_dtype(widest) if widest is not None else ""


def _short_dtype(dtype: torch.dtype) -> str:
    name = _SHORT_NAMES.get(dtype)
    if name is None:
        text = str(dtype).removeprefix("torch.")
        name = _SHORT_NAMES[dtype] = _SHORT_DTYPES.get(text, text)
    return name


def _union_bytes(spans: list[tuple[int, int]]) -> int:
    """Total length of the spans' union: overlapping (aliased) memory counted once."""
    if not spans:
        return 0
    total, end = 0, -1
    for start, stop in sorted(spans):
        if stop <= end:
            continue
        total += stop - max(start, end)
        end = stop
    return total


def argument_declaration(args: tuple[Any, ...]) -> dict[str, Any]:
    """What the launch-metadata dict of an undeclared launch gets: bytes (None without tensors),
    shapes and dtype, marked FROM_ARGUMENTS."""
    total, shapes, dtype = argument_bytes(args)
    return {"bytes": total if shapes else None, "shapes": shapes, "dtype": dtype, FROM_ARGUMENTS: True}


_UNDECLARED = "_rooflinectl_undeclared"


def _undeclared(kernel: Any) -> bool:
    """A user's kernel (not Inductor's) that declares no launch_metadata."""
    if str(getattr(kernel, "name", "")).startswith(INDUCTOR_PREFIX):
        return False
    fn = getattr(getattr(kernel, "src", None), "fn", None)
    return getattr(fn, "launch_metadata", None) is None


def with_argument_bytes(original: Callable[..., Any]) -> Callable[..., Any]:
    """CompiledKernel.launch_metadata, wrapped: an undeclared, non-Inductor kernel's lazy dict
    also carries argument_declaration(args), added to it when the hook reads it."""

    def launch_metadata(self: Any, grid: Any, stream: Any, *args: Any) -> Any:
        lazy = original(self, grid, stream, *args)
        undeclared = self.__dict__.get(_UNDECLARED)  # asked once per compiled kernel, not per launch
        if undeclared is None:
            undeclared = self.__dict__[_UNDECLARED] = _undeclared(self)
        if undeclared and lazy is not None:
            lazy.add(argument_declaration, (args,))
        return lazy

    launch_metadata.__wrapped__ = original  # type: ignore[attr-defined]
    return launch_metadata


@contextmanager
def argument_bytes_recorded() -> Iterator[None]:
    """While active, undeclared Triton launches carry their argument bytes to the launch hook."""
    try:
        from triton.compiler.compiler import CompiledKernel
    except ImportError:  # no triton, or one without launch_metadata (< 3.0): nothing to read
        yield
        return
    original = getattr(CompiledKernel, "launch_metadata", None)
    if original is None or hasattr(original, "__wrapped__"):
        yield
        return
    CompiledKernel.launch_metadata = with_argument_bytes(original)
    try:
        yield
    finally:
        CompiledKernel.launch_metadata = original
