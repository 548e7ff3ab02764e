"""The same attention through torch.nn.functional.scaled_dot_product_attention (fused, FlashAttention on CUDA).

The "after" half of the README's comparison chart: same module names as attention_naive.py
(`attn`, `proj`), so `rooflinectl plot naive.profile.json sdpa.profile.json` matches them.
Run under the profiler: rooflinectl profile examples/attention_sdpa.py -- --seq 2048
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
import attention_naive  # noqa: E402  (shared Block, arguments and inputs)


class Attention(nn.Module):
    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v)


def main() -> None:
    args = attention_naive.parse_args()
    model, q, k, v = attention_naive.make_inputs(args)
    model.attn = Attention()
    with torch.no_grad():
        for _ in range(args.iters):
            out = model(q, k, v)
    if out.is_cuda:
        torch.cuda.synchronize()
    print(f"sdpa attention {tuple(q.shape)} {q.dtype} on {q.device}: out {tuple(out.shape)}")


if __name__ == "__main__":
    main()
