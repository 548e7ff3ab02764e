"""Real models as function-mode targets for the advice checks (scripts/gpu.d/73-advice.sh):
`rooflinectl profile scripts/advice_models.py:step`, random weights from transformers configs.

ADVICE_MODEL picks the model: gpt2 (GPT-2 small eager forward, bf16, batch 8 x 1024 tokens: the
GPU, not the host, bounds the step) or vit (ViT-B/16 forward under torch.compile, bf16). ADVICE_LAYERS, ADVICE_BATCH, ADVICE_SEQ size it; ADVICE_DEVICE=cpu
runs it on the CPU (tests). Two knobs apply an advised fix to the model itself, for the
end-to-end checks: ADVICE_VOCAB=50304 pads GPT-2's vocabulary (the LM head's N), and
ADVICE_COMPILE_ACT=1 compiles each GPT-2 block's MLP activation (the mul+tanh+add+mul chain).
ADVICE_MATMUL_PRECISION=high sets torch.set_float32_matmul_precision before the model is built
(the ViT's fp32 attention matmuls on TF32 tensor cores: precision.fp32-matmul's fix).

`python scripts/advice_models.py time` prints one TIMING line: the median of ADVICE_STEPS calls
of step() timed with CUDA events (wall clock on a CPU), after ADVICE_WARMUP calls.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import torch


def _env(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


def _device() -> str:
    return os.environ.get("ADVICE_DEVICE") or ("cuda" if torch.cuda.is_available() else "cpu")


def gpt2() -> Callable[[], torch.Tensor]:
    from transformers import GPT2Config, GPT2LMHeadModel

    device = _device()
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    torch.manual_seed(0)
    seq = _env("ADVICE_SEQ", 1024)
    config = GPT2Config(n_layer=_env("ADVICE_LAYERS", 12), n_positions=max(1024, seq),
                        vocab_size=_env("ADVICE_VOCAB", 50257))
    model = GPT2LMHeadModel(config).eval().to(device=device, dtype=dtype)
    if os.environ.get("ADVICE_COMPILE_ACT") == "1":
        # one compiled activation for every block (it holds no weights): compiling each block's own
        # would recompile per module and fall back to eager after Dynamo's cache limit (8)
        compiled = torch.compile(model.transformer.h[0].mlp.act, dynamic=False)
        for block in model.transformer.h:
            block.mlp.act = compiled
    ids = torch.randint(0, 50257, (_env("ADVICE_BATCH", 8), seq), device=device)

    def forward() -> torch.Tensor:
        with torch.no_grad():
            return model(ids).logits

    return forward


def vit() -> Callable[[], torch.Tensor]:
    from transformers import ViTConfig, ViTModel

    device = _device()
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    torch.manual_seed(0)
    config = ViTConfig(num_hidden_layers=_env("ADVICE_LAYERS", 12), image_size=224, patch_size=16)
    model = ViTModel(config, add_pooling_layer=False).eval().to(device=device, dtype=dtype)
    compiled = torch.compile(model)
    images = torch.randn(_env("ADVICE_BATCH", 32), 3, 224, 224, device=device, dtype=dtype)

    def forward() -> torch.Tensor:
        with torch.no_grad():
            return compiled(pixel_values=images).last_hidden_state

    return forward


MODELS: dict[str, Callable[[], Callable[[], torch.Tensor]]] = {"gpt2": gpt2, "vit": vit}


def make_inputs() -> tuple[Callable[[], torch.Tensor]]:
    """The model's forward, built and called once (a compilation happens here, not profiled)."""
    name = os.environ.get("ADVICE_MODEL", "gpt2")
    if os.environ.get("ADVICE_MATMUL_PRECISION"):
        torch.set_float32_matmul_precision(os.environ["ADVICE_MATMUL_PRECISION"])
    if name not in MODELS:
        sys.exit(f"ADVICE_MODEL must be one of {', '.join(MODELS)}, not {name!r}")
    forward = MODELS[name]()
    forward()
    return (forward,)


def step(forward: Callable[[], torch.Tensor]) -> torch.Tensor:
    """One forward: the profiled function."""
    return forward()


def _time(forward: Callable[[], Any], warmup: int, steps: int) -> list[float]:
    """Milliseconds of each timed call: CUDA events on a GPU, the wall clock on a CPU."""
    for _ in range(warmup):
        forward()
    if not torch.cuda.is_available() or _device() == "cpu":
        times = []
        for _ in range(steps):
            start = time.perf_counter()
            forward()
            times.append((time.perf_counter() - start) * 1e3)
        return times
    torch.cuda.synchronize()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(steps)]
    for a, b in events:
        a.record()
        forward()
        b.record()
    torch.cuda.synchronize()
    return [a.elapsed_time(b) for a, b in events]


if __name__ == "__main__":
    if sys.argv[1:] != ["time"]:
        sys.exit(__doc__)
    (fn,) = make_inputs()
    ms = _time(fn, _env("ADVICE_WARMUP", 3), _env("ADVICE_STEPS", 20))
    print("TIMING " + json.dumps({"model": os.environ.get("ADVICE_MODEL", "gpt2"), "median_ms": statistics.median(ms),
                                  "iter_ms": ms, "vocab": _env("ADVICE_VOCAB", 50257),
                                  "compile_act": os.environ.get("ADVICE_COMPILE_ACT") == "1",
                                  "matmul_precision": torch.get_float32_matmul_precision()}))
