"""What a GEMM's kernel name and shapes say: its M, N, K, the output tile, the architecture the
kernel was written for, its operand alignment, and whether it runs on tensor cores.

Names as the H200 traces show them (tests/data/h200_real):
  nvjet_sm90_tst_192x128_64x5_1x2_h_bz_coopB_bias_NNT    cuBLAS, Hopper (wgmma), persistent
  sm90_xmma_fprop_implicit_gemm_..._tilesize128x128x64_...  cuDNN / cuBLAS, Hopper
  cutlass_75_tensorop_bf16_s1688gemm_bf16_128x128_tn_align1  Turing-era CUTLASS 2 kernel
  cutlass_tensorop_bf16_s16816fprop_optimized_..._align8     Ampere mma.sync (s16816) kernel
cuBLAS works on column-major matrices, so it computes PyTorch's C = A @ B as C^T = B^T A^T: the
first number of a tile is along PyTorch's N (output columns), the second along M (rows). Checked
on those traces: the grid of each non-persistent kernel is its tile count (times a swizzle), and
each persistent nvjet kernel's grid is min(tiles rounded up to its cluster, SMs).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from rooflinectl.analysis.advice.common import parse_shapes

# Architecture of a kernel from its name: explicit tags first, then the MMA instruction shape.
_ARCH_TAGS: tuple[tuple[re.Pattern[str], int | None], ...] = (
    (re.compile(r"(?:^|[^a-z0-9])sm_?(\d{2,3})(?=[_a-z])"), None),  # sm90_xmma, nvjet_sm90, cutlass3x_sm100
    (re.compile(r"cutlass_(\d{2,3})_"), None),  # cutlass_75_tensorop, cutlass_80_tensorop
    (re.compile(r"(?:^|[^a-z])maxwell_"), 52),
    (re.compile(r"(?:^|[^a-z])volta_"), 70),
    (re.compile(r"(?:^|[^a-z])turing_"), 75),
    (re.compile(r"(?:^|[^a-z])ampere_"), 80),
    (re.compile(r"(?:^|[^a-z])hopper_"), 90),
    (re.compile(r"wgmma|gmma_"), 90),
    (re.compile(r"[shi]16832|[sh]16816|i8816"), 80),  # Ampere mma.sync shapes
    (re.compile(r"[sh]1688|i8816"), 75),
    (re.compile(r"[sh]884"), 70),
)
_ALIGN = re.compile(r"align(\d+)")
_TILE = (
    re.compile(r"nvjet_sm\d+_[a-z]+_(\d+)x(\d+)_"),
    re.compile(r"tilesize(\d+)x(\d+)x\d+"),
    re.compile(r"gemm_[a-z0-9]+_(\d+)x(\d+)_"),  # cutlass_75_tensorop_bf16_s1688gemm_bf16_128x128_tn
    re.compile(r"(?:fprop|dgrad|wgrad)_[a-z]+_[a-z0-9]+_(\d+)x(\d+)_"),
    re.compile(r"_(\d+)x(\d+)_\d+x\d+_(?:tn|nt|nn|tt)"),
)
_GEMV = re.compile(r"gemv|gemmSN|gemmk1|dot_kernel|gemvx", re.IGNORECASE)
_SIMT = re.compile(r"sgemm|dgemm|hgemm(?!.*tensor)|_f32f32_f32f32_f32_|ffma", re.IGNORECASE)
_TENSOR = re.compile(r"nvjet|tensorop|wgmma|gmma|s16816|s1688|i16832|h884|s884|bf16bf16|f16f16|xmma_gemm_(?:bf|f16|e4m3|e5m2|i8)",
                     re.IGNORECASE)
_HELPERS = re.compile(r"splitKreduce|ReduceSplitK|init_device_workspace|AddPadding|prepare_grouped", re.IGNORECASE)


@dataclass(frozen=True)
class GemmDims:
    """A (batched) matrix product C[batch, M, N] = A[batch, M, K] @ B[batch, K, N]."""

    m: int
    n: int
    k: int
    batch: int = 1


def gemm_dims(op: str, shapes_text: str) -> GemmDims | None:
    """M, N, K of a GEMM op from its input shapes as the table writes them (None if they do not fit)."""
    mats = [s for s in parse_shapes(shapes_text) if len(s) >= 2]
    if op in ("aten::mm", "aten::addmm", "aten::_int_mm", "aten::_scaled_mm", "aten::matmul"):
        if len(mats) < 2 or mats[0][-1] != mats[1][-2 if len(mats[1]) >= 2 else 0]:
            return None
        a, b = mats[0], mats[1]
        return GemmDims(m=math.prod(a[:-1]), n=b[-1], k=a[-1])
    if op in ("aten::bmm", "aten::baddbmm"):
        if len(mats) < 2 or len(mats[0]) != 3 or len(mats[1]) != 3 or mats[0][2] != mats[1][1]:
            return None
        a, b = mats[0], mats[1]
        return GemmDims(m=a[1], n=b[2], k=a[2], batch=a[0])
    if op == "aten::linear":  # input [..., K], weight [N, K]
        if len(mats) < 2 or mats[0][-1] != mats[1][-1]:
            return None
        return GemmDims(m=math.prod(mats[0][:-1]), n=mats[1][0], k=mats[0][-1])
    return None


@dataclass(frozen=True)
class ConvDims:
    """A convolution's channels: input [N, C_in, ...], weight [C_out, C_in / groups, ...]."""

    c_in: int
    c_out: int
    groups: int = 1

    def named(self) -> dict[str, int]:
        return {"C_in": self.c_in, "C_out": self.c_out}


def conv_dims(op: str, shapes_text: str) -> ConvDims | None:
    """Channels of a convolution from its input and weight shapes (convolution_backward's inputs
    are grad_output, input, weight), None when they do not fit."""
    shapes = [s for s in parse_shapes(shapes_text) if len(s) >= 3]
    if op == "aten::convolution_backward":
        shapes = shapes[1:]
    if len(shapes) < 2 or len(shapes[0]) != len(shapes[1]):
        return None
    x, w = shapes[0], shapes[1]
    if w[1] <= 0 or x[1] % w[1]:
        return None
    return ConvDims(c_in=x[1], c_out=w[0], groups=x[1] // w[1])


def kernel_arch(name: str) -> int | None:
    """The architecture a kernel was compiled for, as sm number (75, 80, 90), from its name."""
    for pattern, arch in _ARCH_TAGS:
        found = pattern.search(name)
        if found:
            return arch if arch is not None else int(found.group(1))
    return None


def kernel_alignment(name: str) -> int | None:
    """The operand alignment in elements a CUTLASS kernel was built for (align1 = unaligned)."""
    found = _ALIGN.search(name)
    return int(found.group(1)) if found else None


def output_tile(name: str) -> tuple[int, int] | None:
    """(rows, columns) of the output tile one block computes, in PyTorch's terms (M, N)."""
    for pattern in _TILE:
        found = pattern.search(name)
        if found:
            along_n, along_m = int(found.group(1)), int(found.group(2))
            return along_m, along_n
    return None


def is_helper(name: str) -> bool:
    """A side kernel of a GEMM (split-K reduction, workspace init, padding), not the product."""
    return bool(_HELPERS.search(name))


def is_gemv_like(name: str) -> bool:
    """A matrix-vector or small-N kernel (CUDA cores) that cuBLAS picks for very thin products."""
    return bool(_GEMV.search(name))


def is_simt_gemm(name: str) -> bool:
    """A GEMM on CUDA cores (FFMA), not tensor cores."""
    return bool(_SIMT.search(name)) and not _TENSOR.search(name)


def output_tiles(dims: GemmDims, tile: tuple[int, int]) -> int:
    """Output tiles a GEMM of these dims needs with this tile: ceil(M / tm) x ceil(N / tn) x batch."""
    return math.ceil(dims.m / tile[0]) * math.ceil(dims.n / tile[1]) * dims.batch
