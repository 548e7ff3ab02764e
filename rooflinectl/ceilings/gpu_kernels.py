"""Small Triton kernels for the measurements: a streaming read and an FMA loop.

Triton is optional: `triton_kernels()` returns None when it is not installed, and the callers
fall back to torch operations (and say so in the measurement's method).
"""

from __future__ import annotations

import functools
from types import SimpleNamespace

READ_BLOCK = 4096  # fp32 elements per program per step: 16 per thread at 8 warps
FMA_BLOCK = 1024  # elements per program: 8 per thread at 4 warps
FMA_CHAINS = 4  # independent accumulators per element
FMA_UNROLL = 4  # FMAs per chain per loop trip (keeps loop overhead under 2% of issue slots)
L1_WINDOW = 2048  # fp32 elements each program re-reads (8 KiB: 8 programs per SM hold 64 KiB in L1)
L1_BLOCK = 512  # elements per load: 4 per thread at 4 warps
L1_STRIDE = 5  # blocks the read moves per trip: coprime with the 4 blocks of a window, and not 1
# (Triton would specialise a 1 into a constant)


@functools.lru_cache(maxsize=1)
def triton_kernels() -> SimpleNamespace | None:
    """The jitted kernels, or None when triton cannot be imported."""
    try:
        import triton
        import triton.language as tl
    except ImportError:
        return None

    @triton.jit
    def read_kernel(x_ptr, out_ptr, n_elements, passes, BLOCK: tl.constexpr):
        # Grid-stride read of x, `passes` times; ".cg" skips L1 so re-reads are served by L2.
        pid = tl.program_id(0)
        step = tl.num_programs(0) * BLOCK
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for _p in range(passes):
            for start in range(pid * BLOCK, n_elements, step):
                offs = start + tl.arange(0, BLOCK)
                acc += tl.load(x_ptr + offs, cache_modifier=".cg")
        tl.store(out_ptr + pid * BLOCK + tl.arange(0, BLOCK), acc)

    @triton.jit
    def fma_kernel(x_ptr, out_ptr, iters, mul, add, BLOCK: tl.constexpr):
        # 4 independent chains c = c * mul + add per element, unrolled 4x: 16 FMA per trip.
        # mul and add are uniform (kernel arguments): each FMA reads one register besides its
        # accumulator, so register-bank conflicts cannot cap the rate.
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        c0 = tl.load(x_ptr + offs)
        m = mul.to(c0.dtype)
        d = add.to(c0.dtype)
        c1 = c0 + 1.0
        c2 = c0 + 2.0
        c3 = c0 + 3.0
        for _i in range(iters):
            for _u in tl.static_range(4):
                c0 = tl.fma(c0, m, d)
                c1 = tl.fma(c1, m, d)
                c2 = tl.fma(c2, m, d)
                c3 = tl.fma(c3, m, d)
        tl.store(out_ptr + offs, c0 + c1 + c2 + c3)

    @triton.jit
    def l1_kernel(x_ptr, out_ptr, stride, ITERS: tl.constexpr, WINDOW: tl.constexpr, BLOCK: tl.constexpr):
        # Each program re-reads its own WINDOW-element chunk ITERS times with L1-cached loads
        # (.ca): after the first pass they hit L1. The block read on each trip moves by a runtime
        # stride, so no load is loop-invariant and no two unrolled trips load a provably equal
        # address (a compiler would hoist or merge those, and the roof would count loads that
        # never ran).
        pid = tl.program_id(0)
        base = pid * WINDOW
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for i in range(ITERS):  # a loop, not unrolled (only static_range unrolls)
            for j in tl.static_range(WINDOW // BLOCK):
                block = (i * stride + j) % (WINDOW // BLOCK)
                acc += tl.load(x_ptr + base + block * BLOCK + tl.arange(0, BLOCK), cache_modifier=".ca")
        tl.store(out_ptr + pid * BLOCK + tl.arange(0, BLOCK), acc)

    return SimpleNamespace(read=read_kernel, fma=fma_kernel, l1=l1_kernel)


def fma_flops(n_elements: int, iters: int) -> float:
    """FLOPs of one fma_kernel launch over n_elements (FMA = 2)."""
    return 2.0 * FMA_CHAINS * FMA_UNROLL * iters * n_elements


def l1_bytes(programs: int, iters: int, window: int = L1_WINDOW) -> float:
    """Bytes one l1_kernel launch loads (fp32): every program reads its window `iters` times."""
    return 4.0 * programs * iters * window
