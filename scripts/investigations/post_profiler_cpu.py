"""What rooflinectl's `--profile-steps` session leaves on the host after its profiler stopped,
without a GPU: a CPU training step of 30 small blocks (Linear, ReLU, LayerNorm: 91 module calls)
and an SGD step, timed (median of 50, three times) before any profiler, after the stop inside the
session (optimizer hook still counting, module scopes removed), and after the session.

Usage: python scripts/investigations/post_profiler_cpu.py   (prints one line, milliseconds per step)
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import torch

from rooflinectl.capture.run.session import profiling


def before_and_after(step: Callable[[], None], *, warmup: int, steps: int, rounds: int, decimals: int = 3) -> str:
    """Median ms per step, `rounds` times each: before any profiler, after the stop of a
    --profile-steps session (3 profiled steps), and after the session."""

    def timed_ms() -> float:
        times = []
        for _ in range(steps):
            start = time.perf_counter()
            step()
            times.append(time.perf_counter() - start)
        return round(statistics.median(times) * 1e3, decimals)

    for _ in range(warmup):
        step()
    before = [timed_ms() for _ in range(rounds)]
    with profiling("cpu", profile_steps=3):
        for _ in range(3):
            step()
        after_stop = [timed_ms() for _ in range(rounds)]
    after_session = [timed_ms() for _ in range(rounds)]
    return f"ms per step: before {before}, after the stop {after_stop}, after the session {after_session}"


def main() -> None:
    torch.set_num_threads(1)
    blocks = [torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.LayerNorm(32)) for _ in range(30)]
    model = torch.nn.Sequential(*blocks)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(8, 32)

    def step() -> None:
        loss = model(x).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()

    print(before_and_after(step, warmup=20, steps=50, rounds=3))


if __name__ == "__main__":
    main()
