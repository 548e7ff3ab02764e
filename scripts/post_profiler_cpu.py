"""What rooflinectl's `--profile-steps` session leaves on the host after its profiler stopped,
without a GPU: a CPU training step of 30 small blocks (Linear, ReLU, LayerNorm: 91 module calls)
and an SGD step, timed (median of 50, three times) before any profiler, after the stop inside the
session (optimizer hook still counting, module scopes removed), and after the session.

Usage: python scripts/post_profiler_cpu.py   (prints one line, milliseconds per step)
"""

from __future__ import annotations

import statistics
import time

import torch

from rooflinectl.capture.session import profiling


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

    def timed_ms(n: int = 50) -> float:
        times = []
        for _ in range(n):
            start = time.perf_counter()
            step()
            times.append(time.perf_counter() - start)
        return round(statistics.median(times) * 1e3, 3)

    for _ in range(20):
        step()
    before = [timed_ms() for _ in range(3)]
    with profiling("cpu", profile_steps=3):
        for _ in range(3):
            step()
        after_stop = [timed_ms() for _ in range(3)]
    after_session = [timed_ms() for _ in range(3)]
    print(f"ms per step: before {before}, after the stop {after_stop}, after the session {after_session}")


if __name__ == "__main__":
    main()
