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

    return SimpleNamespace(read=read_kernel, fma=fma_kernel)


def fma_flops(n_elements: int, iters: int) -> float:
    """FLOPs of one fma_kernel launch over n_elements (FMA = 2)."""
    return 2.0 * FMA_CHAINS * FMA_UNROLL * iters * n_elements
