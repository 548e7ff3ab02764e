"""Function mode: `rooflinectl profile examples/train_step.py:step --warmup 3 --iters 10`.

rooflinectl imports this file (the __main__ block does not run), calls make_inputs() once and
step(*inputs) after warm-up. Runs on CPU (fp32) or CUDA (bf16).
"""

from __future__ import annotations

import torch


def make_inputs() -> tuple[torch.nn.Module, torch.optim.Optimizer, torch.Tensor, torch.Tensor]:
    device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    width = 2048 if device == "cuda" else 256
    model = torch.nn.Sequential(torch.nn.Linear(width, 4 * width), torch.nn.ReLU(),
                                torch.nn.Linear(4 * width, 10)).to(device=device, dtype=dtype)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(128, width, device=device, dtype=dtype)
    y = torch.randint(0, 10, (128,), device=device)
    return model, optimizer, x, y


def step(model: torch.nn.Module, optimizer: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor) -> None:
    optimizer.zero_grad(set_to_none=True)
    loss = torch.nn.functional.cross_entropy(model(x).float(), y)
    loss.backward()
    optimizer.step()


if __name__ == "__main__":
    step(*make_inputs())
    print("one step done")
