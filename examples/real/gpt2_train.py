"""GPT-2 (transformers, random weights) training steps: bf16 autocast, AdamW, a plain user
script with set-up, warm-up and a timed loop. No region.

python examples/real/gpt2_train.py --layers 12 --batch 8 --seq 1024
Needs `transformers`. Prints one TIMING line and an OUTPUT digest (the last loss).
"""

from __future__ import annotations

import json
import sys

import torch
from _common import parser, pick_device, run_loop, training_step


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--fused-adam", action="store_true", help="AdamW(fused=True)")
    args = p.parse_args()
    try:
        from transformers import GPT2Config, GPT2LMHeadModel
    except ImportError as exc:
        sys.exit(f"gpt2_train.py needs transformers (pip install transformers): {exc}")
    device = pick_device(args.device)
    torch.manual_seed(0)
    config = GPT2Config(n_layer=args.layers, n_positions=max(1024, args.seq))
    model = GPT2LMHeadModel(config).to(device).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True if args.fused_adam else None)
    ids = torch.randint(0, config.vocab_size, (args.batch, args.seq), device=device)

    def fwd_bwd() -> torch.Tensor:
        with torch.autocast(device_type=device, dtype=torch.bfloat16):
            loss = model(ids, labels=ids).loss
        loss.backward()
        return loss

    step = training_step(fwd_bwd, optimizer, args.compile)

    out = run_loop("gpt2_train", step, args.warmup, args.steps, device,
                   {"compile": args.compile, "layers": args.layers, "batch": args.batch, "seq": args.seq})
    print("OUTPUT " + json.dumps({"loss": float(out.detach())}))


if __name__ == "__main__":
    main()
