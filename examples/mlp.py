"""A small MLP forward and backward: GEMMs, bias, GELU, layer norm, a loss.

python examples/mlp.py --batch 64          (CPU: fp32; CUDA: bf16 by default)
rooflinectl profile examples/mlp.py -- --batch 64
"""

from __future__ import annotations

import argparse

import torch

import rooflinectl


def build(width: int, depth: int, device: str, dtype: torch.dtype) -> torch.nn.Module:
    layers: list[torch.nn.Module] = []
    for _ in range(depth):
        layers += [torch.nn.Linear(width, 4 * width), torch.nn.GELU(), torch.nn.Linear(4 * width, width),
                   torch.nn.LayerNorm(width)]
    return torch.nn.Sequential(*layers).to(device=device, dtype=dtype)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--width", type=int, default=None, help="hidden width (default: 256 on CPU, 4096 on CUDA)")
    parser.add_argument("--depth", type=int, default=2)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--dtype", choices=["fp32", "bf16"], default=None)
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype_name = args.dtype or ("bf16" if device == "cuda" else "fp32")
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype_name]
    width = args.width or (4096 if device == "cuda" else 256)
    model = build(width, args.depth, device, dtype)
    x = torch.randn(args.batch, width, device=device, dtype=dtype)
    target = torch.randn(args.batch, width, device=device, dtype=dtype)
    # Warm-up outside the region: first calls pick algorithms and allocate.
    torch.nn.functional.mse_loss(model(x), target).backward()
    for _ in range(args.steps):
        with rooflinectl.region("step"):
            loss = torch.nn.functional.mse_loss(model(x), target)
            loss.backward()
    print(f"loss {loss.item():.4f} on {device} ({dtype_name}, width {width}, batch {args.batch})")


if __name__ == "__main__":
    main()
