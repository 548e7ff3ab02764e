"""A Mixtral-style mixture-of-experts language model (transformers' MixtralConfig, random weights):
forward passes under torch.no_grad in bf16 (fp32 on a CPU), top-2 routing over 8 experts.
A plain user script with set-up, warm-up and a timed loop. No region.

python examples/real/mixtral_forward.py --layers 4 --hidden 1024 --batch 4 --seq 1024
Needs `transformers`. Prints one TIMING line and an OUTPUT digest.
"""

from __future__ import annotations

import json
import sys

import torch
from _common import digest, maybe_compile, parser, pick_device, run_loop


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--experts", type=int, default=8)
    p.add_argument("--top-k", type=int, default=2)
    p.add_argument("--vocab", type=int, default=32000)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seq", type=int, default=1024)
    args = p.parse_args()
    try:
        from transformers import MixtralConfig, MixtralForCausalLM
    except ImportError as exc:
        sys.exit(f"mixtral_forward.py needs transformers (pip install transformers): {exc}")
    device = pick_device(args.device)
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    torch.manual_seed(0)
    config = MixtralConfig(vocab_size=args.vocab, hidden_size=args.hidden,
                           intermediate_size=int(args.hidden * 7 / 4) // 64 * 64,
                           num_hidden_layers=args.layers, num_attention_heads=16, num_key_value_heads=4,
                           num_local_experts=args.experts, num_experts_per_tok=args.top_k,
                           max_position_embeddings=max(2048, args.seq))
    model = MixtralForCausalLM(config).to(device=device, dtype=dtype).eval()
    ids = torch.randint(0, config.vocab_size, (args.batch, args.seq), device=device)
    forward = maybe_compile(lambda: model(input_ids=ids, use_cache=False).logits, args.compile)

    def step() -> torch.Tensor:
        with torch.no_grad():
            return forward()

    out = run_loop("mixtral_forward", step, args.warmup, args.steps, device,
                   {"compile": args.compile, "layers": args.layers, "hidden": args.hidden,
                    "experts": args.experts, "batch": args.batch, "seq": args.seq})
    print("OUTPUT " + json.dumps(digest(out)))


if __name__ == "__main__":
    main()
