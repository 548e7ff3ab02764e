"""Does a `--profile-steps` session leave anything behind on a compiled training step? A
torchvision ResNet-18 whose forward and backward are one `torch.compile`d function (SGD eager),
10 steps timed twice (median each) before any profiler, after the stop inside the session, and
after the session; on the CPU.

Usage: python scripts/post_profiler_compiled.py   (needs torchvision; prints one line, ms per step)
"""

from __future__ import annotations

import statistics
import time

import torch
import torchvision

from rooflinectl.capture.session import profiling


def main() -> None:
    torch.manual_seed(0)
    model = torchvision.models.resnet18()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(4, 3, 64, 64), torch.randint(0, 1000, (4,))

    @torch.compile
    def fwd_bwd() -> torch.Tensor:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        return loss

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        fwd_bwd()
        opt.step()

    def timed_ms(n: int = 10) -> float:
        times = []
        for _ in range(n):
            start = time.perf_counter()
            step()
            times.append(time.perf_counter() - start)
        return round(statistics.median(times) * 1e3, 2)

    for _ in range(3):
        step()
    before = [timed_ms() for _ in range(2)]
    with profiling("cpu", profile_steps=3):
        for _ in range(3):
            step()
        after_stop = [timed_ms() for _ in range(2)]
    after_session = [timed_ms() for _ in range(2)]
    print(f"ms per step: before {before}, after the stop {after_stop}, after the session {after_session}")


if __name__ == "__main__":
    main()
