"""Host cost per launch of rooflinectl's Triton launch hook (capture/triton_hook.py with the
argument walk of capture/triton_args.py), on real launches of a small undeclared kernel.

    python scripts/bench_triton_hook.py [--launches 5000]

Prints FIGURE lines: microseconds per launch without the hook, with it, and the difference
(best of 5 rounds; the kernel is tiny so the host's launch path is what is timed).
"""

from __future__ import annotations

import argparse
import sys
import time
from contextlib import nullcontext

import torch
import triton
import triton.language as tl

from rooflinectl.capture.triton_hook import triton_launches


@triton.jit
def tiny_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def per_launch_us(launches: int, hooked: bool, x: torch.Tensor, y: torch.Tensor, out: torch.Tensor) -> float:
    best = float("inf")
    for _ in range(5):
        sink: list[dict] = []
        with triton_launches(sink) if hooked else nullcontext():
            torch.cuda.synchronize()
            start = time.perf_counter()
            for _ in range(launches):
                tiny_add[(1,)](x, y, out, x.numel(), BLOCK=1024)
            torch.cuda.synchronize()
            best = min(best, (time.perf_counter() - start) / launches * 1e6)
        if hooked and len(sink) != launches:
            print(f"CHECK hook recorded {len(sink)} of {launches} launches")
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--launches", type=int, default=5000)
    args = parser.parse_args(argv)
    x, y = torch.rand(1024, device="cuda"), torch.rand(1024, device="cuda")
    out = torch.empty_like(x)
    tiny_add[(1,)](x, y, out, x.numel(), BLOCK=1024)  # compile
    plain = per_launch_us(args.launches, False, x, y, out)
    hooked = per_launch_us(args.launches, True, x, y, out)
    print(f"FIGURE triton launch host time: {plain:.2f} us without the hook, {hooked:.2f} us with it "
          f"(+{hooked - plain:.2f} us per launch, 3 tensor arguments)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
