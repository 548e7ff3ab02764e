"""A decoder layer's Q, K and V projections as three Linear layers, for a small batch of tokens
(64 sequences decoding one token each): three skinny GEMMs, memory-bound and too short to reach
the DRAM roof: the gemm.skinny finding and the fix it names, one Linear with the three weights
concatenated (GPT-2's c_attn).

python examples/qkv_projections.py            # before: per layer a LayerNorm, then 3 F.linear (W [2304, 2304])
python examples/qkv_projections.py --fixed    # after: per layer a LayerNorm, then 1 F.linear (W [6912, 2304])
python examples/qkv_projections.py --time     # print median ms per step (CUDA events on a GPU)
rooflinectl profile examples/qkv_projections.py -o before.json -- --steps 5 && rooflinectl advise before.json

Each projection, x [64, 2304] @ W.T + bias in bf16, reads a 10.6 MB weight to do 0.68 GFLOP:
61 FLOP per byte, under half the H200's ridge point (168 FLOP/B on measured roofs, 206 on the
datasheet's), so no kernel makes it compute-bound, and at this size a GEMM's fixed costs
(ramp-up, pipeline fill, epilogue) weigh against its few microseconds of streaming. The fix does
the same work (the input read once instead of three times) as one GEMM three times as wide; q, k
and v are views of its output. The layers' weights (4 x 32 MB) do not fit the 60 MB L2, so each
step reads them from DRAM. The LayerNorm before each layer's projections keeps them from running
4 or more times back to back (gemm.batch-small's case, whose fix is one bmm).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from _bench import add_step_args, add_time_arg, device_and_dtype, example_parser, time_or_profile


def main() -> None:
    parser = example_parser(__doc__)
    parser.add_argument("--rows", type=int, default=None, help="tokens per step (default: 8 on CPU, 64 on CUDA)")
    parser.add_argument("--hidden", type=int, default=None, help="default: 256 on CPU, 2304 on CUDA")
    parser.add_argument("--layers", type=int, default=4)
    add_step_args(parser, fixed_help="apply the fix: one Linear per layer, Q, K and V's weights concatenated")
    add_time_arg(parser)
    args = parser.parse_args()
    device, dtype = device_and_dtype()
    rows = args.rows or (64 if device == "cuda" else 8)
    hidden = args.hidden or (2304 if device == "cuda" else 256)
    x = torch.randn(rows, hidden, device=device, dtype=dtype)
    qkv_weights = [torch.randn(3 * hidden, hidden, device=device, dtype=dtype) * hidden ** -0.5
                   for _ in range(args.layers)]
    qkv_biases = [torch.randn(3 * hidden, device=device, dtype=dtype) * 0.02 for _ in range(args.layers)]
    # the same numbers as three separate Linear layers: contiguous weights of their own
    weights = [[w.contiguous() for w in qkv.split(hidden)] for qkv in qkv_weights]
    biases = [[b.contiguous() for b in qkv.split(hidden)] for qkv in qkv_biases]

    @torch.inference_mode()
    def separate() -> list[torch.Tensor]:
        out = []
        for layer in range(args.layers):
            h = F.layer_norm(x, (hidden,))
            out += [F.linear(h, w, b) for w, b in zip(weights[layer], biases[layer])]  # q, k, v
        return out

    @torch.inference_mode()
    def merged() -> list[torch.Tensor]:
        out = []
        for layer in range(args.layers):
            h = F.layer_norm(x, (hidden,))
            out += F.linear(h, qkv_weights[layer], qkv_biases[layer]).split(hidden, dim=-1)  # views: no kernel
        return out

    step = merged if args.fixed else separate
    step()  # warm-up: cuBLAS heuristics and allocation stay outside the counted region
    if time_or_profile("qkv_projections", step, args, device):
        return
    shape = f"one [{3 * hidden}, {hidden}] weight" if args.fixed else f"three [{hidden}, {hidden}] weights"
    print(f"qkv_projections on {device}: {args.layers} layers of {shape}, rows {rows}, {dtype}, fixed={args.fixed}")


if __name__ == "__main__":
    main()
