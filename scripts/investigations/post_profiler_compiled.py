"""Does a `--profile-steps` session leave anything behind on a compiled training step? A
torchvision ResNet-18 whose forward and backward are one `torch.compile`d function (SGD eager),
10 steps timed twice (median each) before any profiler, after the stop inside the session, and
after the session; on the CPU.

Usage: python scripts/investigations/post_profiler_compiled.py   (needs torchvision; prints one line, ms per step)
"""

from __future__ import annotations

import torch
import torchvision
from post_profiler_cpu import before_and_after  # scripts/ is on the path of a script run from it


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

    print(before_and_after(step, warmup=3, steps=10, rounds=2, decimals=2))


if __name__ == "__main__":
    main()
