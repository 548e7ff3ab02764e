"""What attention_naive.py and attention_sdpa.py share: the Block around the attention (module
names `attn` and `proj`, which `rooflinectl plot` matches across the two profiles), their
arguments (--batch --heads --seq --dim --iters), inputs and forward loop.

Not an example itself: the two import it as `from _attention import ...`.
"""

from __future__ import annotations

import argparse

import torch
from _bench import device_and_dtype
from torch import nn


class Block(nn.Module):
    """Attention followed by an output projection, so both charts share one matched GEMM."""

    def __init__(self, attn: nn.Module, heads: int, dim: int) -> None:
        super().__init__()
        self.attn = attn
        self.proj = nn.Linear(heads * dim, heads * dim, bias=False)

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        b, h, s, d = q.shape
        out = self.attn(q, k, v).transpose(1, 2).reshape(b, s, h * d)
        return self.proj(out)


def parse_args(description: str) -> argparse.Namespace:
    cuda = torch.cuda.is_available()
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--batch", type=int, default=4 if cuda else 1)
    parser.add_argument("--heads", type=int, default=16 if cuda else 2)
    parser.add_argument("--seq", type=int, default=2048 if cuda else 128)
    parser.add_argument("--dim", type=int, default=64 if cuda else 32)
    parser.add_argument("--iters", type=int, default=10)
    return parser.parse_args()


def make_inputs(attn: nn.Module, args: argparse.Namespace) -> tuple[nn.Module, torch.Tensor, torch.Tensor, torch.Tensor]:
    device, dtype = device_and_dtype()
    shape = (args.batch, args.heads, args.seq, args.dim)
    q, k, v = (torch.randn(shape, device=device, dtype=dtype) for _ in range(3))
    model = Block(attn, args.heads, args.dim).to(device=device, dtype=dtype)
    return model, q, k, v


def run(name: str, attn: nn.Module, description: str) -> None:
    """Parse the arguments, run Block(attn) forward --iters times and print what ran."""
    args = parse_args(description)
    model, q, k, v = make_inputs(attn, args)
    with torch.no_grad():
        for _ in range(args.iters):
            out = model(q, k, v)
    if out.is_cuda:
        torch.cuda.synchronize()
    print(f"{name} attention {tuple(q.shape)} {q.dtype} on {q.device}: out {tuple(out.shape)}")
