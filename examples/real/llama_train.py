"""A Llama-style language model (transformers' LlamaConfig, random weights) training steps:
grouped-query attention, SwiGLU MLP, RMSNorm, bf16 autocast, AdamW (fused on a GPU unless
--no-fused-adam). A plain user script with set-up, warm-up and a timed loop. No region.

python examples/real/llama_train.py --layers 8 --hidden 1024 --batch 4 --seq 1024
Needs `transformers`. Prints one TIMING line and an OUTPUT digest (the last loss).
"""

from __future__ import annotations

import json
import sys

import torch
from _common import parser, pick_device, run_loop, training_step


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--kv-heads", type=int, default=4, help="key/value heads (grouped-query attention)")
    p.add_argument("--vocab", type=int, default=32000)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--no-fused-adam", action="store_true", help="AdamW's default (foreach) implementation")
    args = p.parse_args()
    try:
        from transformers import LlamaConfig, LlamaForCausalLM
    except ImportError as exc:
        sys.exit(f"llama_train.py needs transformers (pip install transformers): {exc}")
    device = pick_device(args.device)
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=args.vocab, hidden_size=args.hidden, intermediate_size=int(args.hidden * 8 / 3) // 64 * 64,
                         num_hidden_layers=args.layers, num_attention_heads=args.heads,
                         num_key_value_heads=args.kv_heads, max_position_embeddings=max(2048, args.seq))
    model = LlamaForCausalLM(config).to(device).train()
    fused = device == "cuda" and not args.no_fused_adam
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True if fused else None)
    ids = torch.randint(0, config.vocab_size, (args.batch, args.seq), device=device)

    def fwd_bwd() -> torch.Tensor:
        with torch.autocast(device_type=device, dtype=torch.bfloat16):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        return loss

    step = training_step(fwd_bwd, optimizer, args.compile)
    out = run_loop("llama_train", step, args.warmup, args.steps, device,
                   {"compile": args.compile, "layers": args.layers, "hidden": args.hidden,
                    "batch": args.batch, "seq": args.seq, "fused_adam": fused})
    print("OUTPUT " + json.dumps({"loss": float(out.detach())}))


if __name__ == "__main__":
    main()
