"""Naive attention (matmul, softmax, matmul) that writes the full score matrix: the
attention.materialised-scores finding and its fix.

python examples/attention_advice.py            # before: Q K^T, scale, softmax, P V as separate kernels
python examples/attention_advice.py --fixed    # after: F.scaled_dot_product_attention (FlashAttention)
python examples/attention_advice.py --time     # print median ms per step
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F

import rooflinectl


def time_steps_ms(step: Callable[[], object], steps: int, device: str) -> float:
    """Median milliseconds per step: CUDA events on a GPU (idle gaps included), perf_counter on CPU."""
    times = []
    for _ in range(steps):
        if device == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            step()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        else:
            t0 = time.perf_counter()
            step()
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def naive_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # [B, H, S, S] written to memory
    return torch.softmax(scores, dim=-1) @ v  # read back, normalised, written, read again


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=None, help="default: 2 on CPU, 8 on CUDA")
    parser.add_argument("--heads", type=int, default=None, help="default: 4 on CPU, 16 on CUDA")
    parser.add_argument("--seq", type=int, default=None, help="default: 128 on CPU, 2048 on CUDA")
    parser.add_argument("--head-dim", type=int, default=64)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--fixed", action="store_true", help="apply the fix: scaled_dot_product_attention")
    parser.add_argument("--time", action="store_true", help="time steps instead of profiling a region")
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    b = args.batch or (8 if device == "cuda" else 2)
    h = args.heads or (16 if device == "cuda" else 4)
    s = args.seq or (2048 if device == "cuda" else 128)
    q, k, v = (torch.randn(b, h, s, args.head_dim, device=device, dtype=dtype) for _ in range(3))
    attend = F.scaled_dot_product_attention if args.fixed else naive_attention

    @torch.inference_mode()
    def step() -> torch.Tensor:
        return attend(q, k, v)

    step()  # warm-up outside the counted region
    if args.time:
        ms = time_steps_ms(step, max(args.steps, 20), device)
        print("TIMING " + json.dumps({"example": "attention_advice", "fixed": args.fixed, "device": device,
                                      "step_ms": ms}))
        return
    for _ in range(args.steps):
        with rooflinectl.region("step"):
            step()
    print(f"attention on {device}: B={b} H={h} S={s} D={args.head_dim} {dtype}, fixed={args.fixed}")


if __name__ == "__main__":
    main()
