"""Host cost per launch of rooflinectl's Triton launch hook (capture/run/triton_hook.py with the
argument walk of capture/run/triton_args.py), on real launches of a small undeclared kernel.

    python scripts/bench_triton_hook.py [--launches 5000]
    python scripts/bench_triton_hook.py --cpu     # no GPU: Triton's own launch_metadata on a stand-in
                                                  # kernel, CPU time (process_time) per launch

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

from rooflinectl.capture.run.triton_hook import triton_launches


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


class _StandIn:
    """Enough of a CompiledKernel for Triton's launch_metadata to run without a GPU."""

    name, function, metadata = "add_kernel", None, None

    def __init__(self) -> None:
        from triton.compiler.compiler import ASTSource

        self.src = object.__new__(ASTSource)
        self.src.fn = type("Fn", (), {"launch_metadata": None, "arg_names": []})()

    def _init_handles(self) -> None:
        pass


def cpu_per_launch_us(launches: int) -> tuple[float, float]:
    """CPU time of Triton's launch_metadata plus the hook per launch, without and with recording."""
    from triton import knobs
    from triton.compiler.compiler import CompiledKernel

    kernel, args = _StandIn(), (torch.empty(64), torch.empty(64), torch.empty(64), 64, 1024)
    results = []
    for hooked in (False, True):
        best = float("inf")
        for _ in range(5):
            with triton_launches([]) if hooked else nullcontext():
                start = time.process_time()
                for _ in range(launches):
                    knobs.runtime.launch_enter_hook(CompiledKernel.launch_metadata(kernel, (1, 1, 1), 0, *args))
                best = min(best, (time.process_time() - start) / launches * 1e6)
        results.append(best)
    return results[0], results[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--launches", type=int, default=5000)
    parser.add_argument("--cpu", action="store_true", help="no GPU: a stand-in kernel, CPU time")
    args = parser.parse_args(argv)
    if args.cpu:
        plain, hooked = cpu_per_launch_us(args.launches)
        print(f"FIGURE triton launch_metadata + hook CPU time: {plain:.2f} us without recording, {hooked:.2f} us "
              f"with it (+{hooked - plain:.2f} us per launch, 3 tensor arguments)")
        return 0
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
