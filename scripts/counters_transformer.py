"""A torch-only transformer forward as a FILE.py:FUNCTION target (the counters speed benchmark's
second region): token embedding, 12 pre-norm encoder layers of width 768 (12 heads, MLP 3072,
GELU, causal attention through scaled_dot_product_attention), a final norm and the vocabulary
projection, batch 4, sequence 512, bf16, random weights: GPT-2 small's shapes, built from
torch.nn alone.

rooflinectl profile scripts/counters_transformer.py:forward --warmup 2 --iters 5 --counters ncu

Why a second one: the GPT-2 region's program takes ~19 s under ncu before any kernel is replayed
(importing transformers and building the model), more than 1/20 of plain ncu's time on its
region; this one starts in a few seconds, so the benchmark measures the replays, not imports.
"""

from __future__ import annotations

import torch

VOCAB, WIDTH, LAYERS, HEADS, BATCH, SEQUENCE = 50257, 768, 12, 12, 4, 512


def make_inputs():
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    # the layers' fused inference path would run each layer as one op: the plain path keeps the
    # usual kernels (GEMMs, attention, norms, element-wise), as a training-style forward has them
    torch.backends.mha.set_fastpath_enabled(False)
    layer = torch.nn.TransformerEncoderLayer(WIDTH, HEADS, 4 * WIDTH, dropout=0.0, activation="gelu",
                                             batch_first=True, norm_first=True)
    model = torch.nn.ModuleDict({
        "embed": torch.nn.Embedding(VOCAB, WIDTH),
        "layers": torch.nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False),
        "norm": torch.nn.LayerNorm(WIDTH),
        "head": torch.nn.Linear(WIDTH, VOCAB, bias=False),
    }).eval().to(device=device, dtype=dtype)
    ids = torch.randint(0, VOCAB, (BATCH, SEQUENCE), device=device)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(SEQUENCE, device=device, dtype=dtype)
    return model, ids, mask


def forward(model, ids, mask) -> torch.Tensor:
    with torch.no_grad():
        hidden = model["layers"](model["embed"](ids), mask=mask, is_causal=True)
        return model["head"](model["norm"](hidden))
