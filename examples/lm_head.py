"""An LM head whose vocabulary (GPT-2's 50257) is not a multiple of 8: the gemm.alignment finding
and its fix, padding the vocabulary to 50304 (a multiple of 64 and of 128).

python examples/lm_head.py                # before: bf16 logits = h @ W.T, h [8192, 768], W [50257, 768]
python examples/lm_head.py --fixed        # after: W padded to [50304, 768]; the extra logits sliced off (a view)
python examples/lm_head.py --time         # print median ms per step (CUDA events on a GPU)
rooflinectl profile examples/lm_head.py -o before.json -- --steps 5 && rooflinectl advise before.json --verify
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from _bench import add_step_args, add_time_arg, device_and_dtype, example_parser, time_or_profile


def padded_vocab(vocab: int, multiple: int = 64) -> int:
    return -(-vocab // multiple) * multiple


def main() -> None:
    parser = example_parser(__doc__)
    parser.add_argument("--tokens", type=int, default=None, help="batch x sequence (default: 64 on CPU, 8192 on CUDA)")
    parser.add_argument("--hidden", type=int, default=768)
    parser.add_argument("--vocab", type=int, default=50257)
    add_step_args(parser, fixed_help="apply the fix: pad the vocabulary to a multiple of 64")
    add_time_arg(parser)
    args = parser.parse_args()
    device, dtype = device_and_dtype()
    tokens = args.tokens or (8192 if device == "cuda" else 64)
    rows = padded_vocab(args.vocab) if args.fixed else args.vocab
    h = torch.randn(tokens, args.hidden, device=device, dtype=dtype)
    weight = torch.zeros(rows, args.hidden, device=device, dtype=dtype)  # padded rows stay zero
    weight[: args.vocab] = torch.randn(args.vocab, args.hidden, device=device, dtype=dtype) * args.hidden ** -0.5

    @torch.inference_mode()
    def step() -> torch.Tensor:
        return F.linear(h, weight)[:, : args.vocab]  # the slice is a view: no kernel

    step()  # warm-up: cuBLAS heuristics and allocation stay outside the counted region
    if time_or_profile("lm_head", step, args, device):
        return
    print(f"lm_head on {device}: tokens {tokens}, hidden {args.hidden}, vocab {args.vocab} "
          f"(weight rows {rows}), {dtype}, fixed={args.fixed}")


if __name__ == "__main__":
    main()
