"""Naive attention: softmax(Q K^T / sqrt(d)) V written out op by op (bmm, mul, softmax, bmm).

The "before" half of the README's comparison chart: the S x S score matrix goes through DRAM
several times, so most of the time is memory-bound. Small sizes on CPU by default; bf16 on CUDA.
Run under the profiler: rooflinectl profile examples/attention_naive.py -- --seq 2048
"""

from __future__ import annotations

import argparse
import math

import torch
from torch import nn


class Attention(nn.Module):
    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        scores = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
        return torch.matmul(torch.softmax(scores, dim=-1), v)


class Block(nn.Module):
    """Attention followed by an output projection, so both charts share one matched GEMM."""

    def __init__(self, heads: int, dim: int) -> None:
        super().__init__()
        self.attn = Attention()
        self.proj = nn.Linear(heads * dim, heads * dim, bias=False)

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        b, h, s, d = q.shape
        out = self.attn(q, k, v).transpose(1, 2).reshape(b, s, h * d)
        return self.proj(out)


def parse_args() -> argparse.Namespace:
    cuda = torch.cuda.is_available()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=4 if cuda else 1)
    parser.add_argument("--heads", type=int, default=16 if cuda else 2)
    parser.add_argument("--seq", type=int, default=2048 if cuda else 128)
    parser.add_argument("--dim", type=int, default=64 if cuda else 32)
    parser.add_argument("--iters", type=int, default=10)
    return parser.parse_args()


def make_inputs(args: argparse.Namespace) -> tuple[nn.Module, torch.Tensor, torch.Tensor, torch.Tensor]:
    device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    shape = (args.batch, args.heads, args.seq, args.dim)
    q, k, v = (torch.randn(shape, device=device, dtype=dtype) for _ in range(3))
    model = Block(args.heads, args.dim).to(device=device, dtype=dtype)
    return model, q, k, v


def main() -> None:
    args = parse_args()
    model, q, k, v = make_inputs(args)
    with torch.no_grad():
        for _ in range(args.iters):
            out = model(q, k, v)
    if out.is_cuda:
        torch.cuda.synchronize()
    print(f"naive attention {tuple(q.shape)} {q.dtype} on {q.device}: out {tuple(out.shape)}")


if __name__ == "__main__":
    main()
