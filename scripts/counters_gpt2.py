"""GPT-2 small forward passes as a FILE.py:FUNCTION target (the counters speed benchmark's
transformer region): 12 layers of width 768, batch 4, sequence 512, bf16, random weights.

rooflinectl profile scripts/counters_gpt2.py:forward --warmup 2 --iters 5 --counters ncu
Five forwards launch a little over 1,000 kernels. Needs transformers.
"""

from __future__ import annotations

import torch


def make_inputs():
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    config = GPT2Config(n_layer=12, n_positions=1024)
    model = GPT2LMHeadModel(config).eval().to(device=device, dtype=dtype)
    ids = torch.randint(0, config.vocab_size, (4, 512), device=device)
    return model, ids


def forward(model, ids) -> torch.Tensor:
    with torch.no_grad():
        return model(ids).logits
