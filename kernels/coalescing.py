"""Memory coalescing: the same copy, with neighbouring threads on neighbouring addresses or not.

A warp's 32 loads become one wide transaction when they fall on consecutive addresses. The
coalesced copy gives each program a contiguous block; the strided twin moves exactly the same
bytes, but walks the buffer column by column (as a [rows, ROW] matrix), so neighbouring threads
touch addresses ROW elements apart and each 4-byte access pulls in a whole 32-byte sector.
Both declare the same minimum traffic: the strided one's lower efficiency is what coalescing buys.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from rooflinectl_kernels.cost import declare, tensor_bytes
from rooflinectl_kernels.registry import KernelSpec, Target, Variant, register, tuned

COPY_BLOCK = 4096  # the strided twin's block
COPY_CONFIGS = [  # elements per program and warps; torch's own copy gives each thread one 16-byte vector
    triton.Config({"BLOCK": 512}, num_warps=4),
    triton.Config({"BLOCK": 1024}, num_warps=4),
    triton.Config({"BLOCK": 2048}, num_warps=8),
    triton.Config({"BLOCK": 16384}, num_warps=8),
]
STRIDED_ROW = 1024  # elements per row of the matrix the strided twin walks column-wise


def _copy_cost(grid, metadata, args):
    return declare("copy_coalesced_kernel", family="copy", nbytes=2 * tensor_bytes(args["src"]))


def _strided_cost(grid, metadata, args):
    return declare("copy_strided_kernel", family="copy", nbytes=2 * tensor_bytes(args["src"]))


def _add_cost(grid, metadata, args):
    n = args["a"].numel()
    return declare("vector_add_kernel", family="elementwise", nbytes=tensor_bytes(args["a"], args["b"], args["out"]), flops=n, bits=32)


@triton.autotune(configs=tuned(COPY_CONFIGS), key=["n"])
@triton.jit(launch_metadata=_copy_cost)
def copy_coalesced_kernel(src, dst, n, BLOCK: tl.constexpr):
    # contiguous: one transaction per warp access (64-bit offsets: 2 GiB buffers hold 2**29 fp32)
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(dst + offsets, tl.load(src + offsets, mask=mask), mask=mask)


@triton.jit(launch_metadata=_strided_cost)
def copy_strided_kernel(src, dst, n, rows, ROW: tl.constexpr, BLOCK: tl.constexpr):
    logical = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    # Column-major walk of a row-major [rows, ROW] buffer: thread i and i+1 are ROW elements apart.
    offsets = (logical % rows) * ROW + logical // rows
    mask = logical < n
    tl.store(dst + offsets, tl.load(src + offsets, mask=mask), mask=mask)


@triton.jit(launch_metadata=_add_cost)
def vector_add_kernel(a, b, out, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(a + offsets, mask=mask)
    y = tl.load(b + offsets, mask=mask)
    tl.store(out + offsets, x + y, mask=mask)


def copy_coalesced(src: torch.Tensor) -> torch.Tensor:
    dst = torch.empty_like(src)
    n = src.numel()
    copy_coalesced_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](src, dst, n)
    return dst


def copy_strided(src: torch.Tensor) -> torch.Tensor:
    """Same result as copy_coalesced; numel must be a multiple of STRIDED_ROW (the matrix view)."""
    n = src.numel()
    if n % STRIDED_ROW:
        raise ValueError(f"the strided copy views the buffer as rows of {STRIDED_ROW}: {n} elements do not fit")
    dst = torch.empty_like(src)
    copy_strided_kernel[(triton.cdiv(n, COPY_BLOCK),)](src, dst, n, n // STRIDED_ROW, ROW=STRIDED_ROW,
                                                       BLOCK=COPY_BLOCK, num_warps=4)
    return dst


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(a)
    n = a.numel()
    vector_add_kernel[(triton.cdiv(n, COPY_BLOCK),)](a, b, out, n, BLOCK=COPY_BLOCK, num_warps=4)
    return out


def _copy_inputs(shape, device, dtype):
    return {"src": torch.randn(shape["n"], device=device, dtype=dtype)}


def _add_inputs(shape, device, dtype):
    return {"a": torch.randn(shape["n"], device=device, dtype=dtype),
            "b": torch.randn(shape["n"], device=device, dtype=dtype)}


# 64 Mi fp32 elements = 256 MiB per buffer: four times the H200's L2, so DRAM is what is timed.
LARGE_N = 64 * 1024 * 1024
# The copy is held to the DRAM roof that `ceilings --measure` measures on 2 GiB buffers; at 256 MiB
# a copy's start and drain are a few percent of its ~130 us, so it is timed at the same 2 GiB.
COPY_LARGE_N = 512 * 1024 * 1024

register(KernelSpec(
    name="copy",
    concept="coalesced vs strided access: the same bytes, a fraction of the bandwidth",
    family="copy",
    dtype=torch.float32,
    shapes={"small": {"n": 16 * STRIDED_ROW}, "large": {"n": COPY_LARGE_N}},
    make_inputs=_copy_inputs,
    reference=lambda i: i["src"].float().clone(),
    variants=(
        Variant("coalesced", "triton", "kernel", lambda i: copy_coalesced(i["src"]), autotuned=(copy_coalesced_kernel,)),
        Variant("strided", "triton", "twin", lambda i: copy_strided(i["src"]),
                note="same bytes, neighbouring threads 4 KiB apart"),
        Variant("torch copy_", "torch", "library", lambda i: torch.empty_like(i["src"]).copy_(i["src"])),
    ),
    target=Target("roof", 0.90, "coalesced copy >= 90% of measured DRAM bandwidth"),
))

register(KernelSpec(
    name="vector_add",
    concept="the simplest Triton kernel: one program per block, masked tail; as fast as torch",
    family="elementwise",
    dtype=torch.float32,
    shapes={"small": {"n": 5000}, "large": {"n": LARGE_N}},
    make_inputs=_add_inputs,
    reference=lambda i: i["a"].float() + i["b"].float(),
    variants=(
        Variant("triton", "triton", "kernel", lambda i: vector_add(i["a"], i["b"])),
        Variant("torch add", "torch", "library", lambda i: i["a"] + i["b"]),
    ),
))
