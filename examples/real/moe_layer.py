"""A mixture-of-experts feed-forward layer with a skewed routing, two ways: a loop of per-expert
matmuls, or one grouped GEMM (`torch._grouped_mm`) over tokens sorted by expert.

python examples/real/moe_layer.py --impl loop
python examples/real/moe_layer.py --impl grouped
Prints one TIMING line and an OUTPUT digest.
"""

from __future__ import annotations

import json

import torch
from _common import digest, parser, pick_device, run_loop


def skewed_counts(tokens: int, experts: int, skew: float) -> list[int]:
    """Tokens per expert, expert i getting a share proportional to 1/(i+1)**skew; multiples of 16."""
    weights = [1.0 / (i + 1) ** skew for i in range(experts)]
    total = sum(weights)
    counts = [max(16, int(tokens * w / total) // 16 * 16) for w in weights]
    counts[0] += tokens - sum(counts)
    return counts


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--impl", choices=["loop", "grouped"], default="loop")
    p.add_argument("--tokens", type=int, default=16384)
    p.add_argument("--experts", type=int, default=8)
    p.add_argument("--dim", type=int, default=2048)
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--skew", type=float, default=1.2)
    args = p.parse_args()
    device = pick_device(args.device)
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    torch.manual_seed(0)
    counts = skewed_counts(args.tokens, args.experts, args.skew)
    x = torch.randn(sum(counts), args.dim, device=device, dtype=dtype)  # tokens already sorted by expert
    w1 = torch.randn(args.experts, args.hidden, args.dim, device=device, dtype=dtype) * args.dim ** -0.5
    w2 = torch.randn(args.experts, args.dim, args.hidden, device=device, dtype=dtype) * args.hidden ** -0.5
    offs = torch.tensor(counts, device=device).cumsum(0).to(torch.int32)
    bounds = [0] + offs.tolist()

    def loop() -> torch.Tensor:
        outs = []
        for e in range(args.experts):
            h = torch.nn.functional.gelu(x[bounds[e]:bounds[e + 1]] @ w1[e].t())
            outs.append(h @ w2[e].t())
        return torch.cat(outs)

    def grouped() -> torch.Tensor:
        h = torch.nn.functional.gelu(torch._grouped_mm(x, w1.transpose(-2, -1), offs=offs))
        return torch._grouped_mm(h, w2.transpose(-2, -1), offs=offs)

    step = grouped if args.impl == "grouped" else loop
    out = run_loop("moe_layer", step, args.warmup, args.steps, device,
                   {"impl": args.impl, "counts": counts, "dim": args.dim, "hidden": args.hidden})
    print("OUTPUT " + json.dumps(digest(out)))


if __name__ == "__main__":
    main()
