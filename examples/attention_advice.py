"""Naive attention (matmul, softmax, matmul) that writes the full score matrix: the
attention.materialised-scores finding and its fix.

python examples/attention_advice.py            # before: Q K^T, scale, softmax, P V as separate kernels
python examples/attention_advice.py --fixed    # after: F.scaled_dot_product_attention (FlashAttention)
python examples/attention_advice.py --time     # print median ms per step
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from _bench import add_step_args, add_time_arg, device_and_dtype, example_parser, time_or_profile


def naive_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # [B, H, S, S] written to memory
    return torch.softmax(scores, dim=-1) @ v  # read back, normalised, written, read again


def main() -> None:
    parser = example_parser(__doc__)
    parser.add_argument("--batch", type=int, default=None, help="default: 2 on CPU, 8 on CUDA")
    parser.add_argument("--heads", type=int, default=None, help="default: 4 on CPU, 16 on CUDA")
    parser.add_argument("--seq", type=int, default=None, help="default: 128 on CPU, 2048 on CUDA")
    parser.add_argument("--head-dim", type=int, default=64)
    add_step_args(parser, fixed_help="apply the fix: scaled_dot_product_attention")
    add_time_arg(parser)
    args = parser.parse_args()
    device, dtype = device_and_dtype()
    b = args.batch or (8 if device == "cuda" else 2)
    h = args.heads or (16 if device == "cuda" else 4)
    s = args.seq or (2048 if device == "cuda" else 128)
    q, k, v = (torch.randn(b, h, s, args.head_dim, device=device, dtype=dtype) for _ in range(3))
    attend = F.scaled_dot_product_attention if args.fixed else naive_attention

    @torch.inference_mode()
    def step() -> torch.Tensor:
        return attend(q, k, v)

    step()  # warm-up outside the counted region
    if time_or_profile("attention_advice", step, args, device):
        return
    print(f"attention on {device}: B={b} H={h} S={s} D={args.head_dim} {dtype}, fixed={args.fixed}")


if __name__ == "__main__":
    main()
