"""Naive attention: softmax(Q K^T / sqrt(d)) V written out op by op (bmm, mul, softmax, bmm).

The "before" half of the README's comparison chart: the S x S score matrix goes through DRAM
several times, so most of the time is memory-bound. Small sizes on CPU by default; bf16 on CUDA.
Run under the profiler: rooflinectl profile examples/attention_naive.py -- --seq 2048
"""

from __future__ import annotations

import math

import torch
from _attention import run
from torch import nn


class Attention(nn.Module):
    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        scores = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
        return torch.matmul(torch.softmax(scores, dim=-1), v)


def main() -> None:
    run("naive", Attention(), description=__doc__.splitlines()[0])


if __name__ == "__main__":
    main()
