"""The same attention through torch.nn.functional.scaled_dot_product_attention (fused, FlashAttention on CUDA).

The "after" half of the README's comparison chart: same module names as attention_naive.py
(`attn`, `proj`), so `rooflinectl plot naive.profile.json sdpa.profile.json` matches them.
Run under the profiler: rooflinectl profile examples/attention_sdpa.py -- --seq 2048
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from _attention import run
from torch import nn


class Attention(nn.Module):
    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v)


def main() -> None:
    run("sdpa", Attention(), description=__doc__.splitlines()[0])


if __name__ == "__main__":
    main()
