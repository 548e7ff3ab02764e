"""The reference kernels: one registry, each a Triton kernel, its twins, its torch reference and its sizes.

A reference kernel is the unit `rooflinectl kernels --only NAME` runs: inputs made from a shape, an fp32
torch reference to check every variant against, and variants. Variants are Triton kernels from
this folder (kind "triton": their cost comes from their launch_metadata) or PyTorch calls (kind
"torch": the library equivalent, or a naive composition of torch ops), in three roles:
  kernel   the reference kernel itself, the technique it teaches (its declared cost is the op's minimum cost)
  twin     the naive way, to show what the reference kernel's technique buys (held to the op's minimum:
           the gap to the roof is what the technique buys; kernels/cost.py)
  library  what PyTorch offers on the same shapes ("when not to write a kernel")
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import triton

ROLES = ("kernel", "twin", "library")
KINDS = ("triton", "torch")
SIZES = ("small", "large")

Inputs = dict[str, Any]


def interpreting() -> bool:
    """True when Triton runs kernels through its CPU interpreter (TRITON_INTERPRET=1)."""
    return bool(triton.knobs.runtime.interpret)


def tuned(configs: list[triton.Config]) -> list[triton.Config]:
    """The autotune list: all configs on a GPU; the first under the interpreter, which cannot
    benchmark (it has no GPU driver) and ignores warps and stages anyway. Tests run every config
    through the interpreter one at a time."""
    return configs[:1] if interpreting() else configs


def row_warps(block: int) -> int:
    """Warps for a program that holds one row of `block` elements: about 16 to 32 per thread."""
    return 4 if block <= 2048 else 8 if block <= 8192 else 16


def processors(device: torch.device) -> int:
    """Streaming multiprocessors of a GPU (the size of a persistent grid); 4 on the CPU."""
    if device.type == "cuda":
        return int(torch.cuda.get_device_properties(device).multi_processor_count)
    return 4


@dataclass(frozen=True)
class Variant:
    name: str
    kind: str  # triton | torch
    role: str  # kernel | twin | library
    run: Callable[[Inputs], Any]  # inputs -> output tensor (or tuple of tensors)
    cost: Callable[[Inputs], dict[str, Any]] | None = None  # torch variants doing other work than the op's minimum
    autotuned: tuple[Any, ...] = ()  # autotuned kernels whose choice and timings to report
    note: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS or self.role not in ROLES:
            raise ValueError(f"variant {self.name}: kind {self.kind!r} / role {self.role!r} unknown")


@dataclass(frozen=True)
class Target:
    """What the reference kernel should reach on an H200 (checked by the benchmark, never a test).

    metric "roof":    efficiency (roof time / time) of the reference kernel at least `threshold`;
    metric "library": library time / reference kernel time at least `threshold` (1.5 = 1.5x faster)."""

    metric: str
    threshold: float
    text: str


@dataclass(frozen=True)
class KernelSpec:
    name: str
    concept: str  # the reference kernel, in a sentence
    family: str  # op family, as the kernel table names them (copy, softmax, gemm, norm, attention, ...)
    dtype: torch.dtype
    shapes: dict[str, dict[str, int]]  # size name -> shape parameters
    make_inputs: Callable[[dict[str, int], torch.device, torch.dtype], Inputs]
    reference: Callable[[Inputs], Any]  # fp32 torch: what every variant must match
    variants: tuple[Variant, ...]
    uses_dot: bool = False  # tl.dot: the interpreter cannot multiply bf16, so it runs these in fp16
    tolerance_scale: float = 1.0  # long reductions (K = 8192) round more than one element-wise op
    atol_scale: float = 1.0  # outputs far below 1 (probabilities, averages): a smaller absolute floor
    target: Target | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def primary(self) -> Variant:
        return next(v for v in self.variants if v.role == "kernel")

    @property
    def library(self) -> Variant | None:
        return next((v for v in self.variants if v.role == "library"), None)

    def dtype_for_run(self) -> torch.dtype:
        """The reference kernel's dtype, except bf16 tl.dot reference kernels under the interpreter: fp16 there."""
        if self.uses_dot and self.dtype == torch.bfloat16 and interpreting():
            return torch.float16
        return self.dtype


KERNELS: dict[str, KernelSpec] = {}


def register(spec: KernelSpec) -> KernelSpec:
    """Add a reference kernel; a second reference kernel of the same name is refused."""
    if spec.name in KERNELS:
        raise ValueError(f"reference kernel {spec.name!r} is registered twice")
    if sum(v.role == "kernel" for v in spec.variants) != 1:
        raise ValueError(f"reference kernel {spec.name!r} needs exactly one variant in the role 'kernel'")
    if spec.primary.kind != "triton":
        raise ValueError(f"reference kernel {spec.name!r}: its 'kernel' variant must be a Triton kernel")
    missing = [s for s in SIZES if s not in spec.shapes]
    if missing:
        raise ValueError(f"reference kernel {spec.name!r} has no shape for size(s) {missing}")
    KERNELS[spec.name] = spec
    return spec


def shape_text(shape: dict[str, int]) -> str:
    """'M=8192 N=8192 K=8192': how tables and the profile show a reference kernel's shape."""
    return " ".join(f"{k}={v}" for k, v in shape.items())


def dtype_name(dtype: torch.dtype) -> str:
    return {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16", torch.float64: "fp64",
            torch.int8: "int8"}.get(dtype, str(dtype).removeprefix("torch."))
