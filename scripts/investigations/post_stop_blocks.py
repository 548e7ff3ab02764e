"""Does anything of a stopped profiling session slow the steps after it? (issue 28)

One process: a Llama-style training step (transformers LlamaConfig, random weights, bf16
autocast, fused AdamW) or eager ResNet-50 training, timed with CUDA events in blocks before any
profiler and after a session stopped at a step limit. Modes:
- control: no profiler between the blocks (the drift of this host within one process);
- ours: rooflinectl's ProfilingSession, 5 steps profiled (the default sampling), then the blocks;
- ours-finalize: as ours, then cuptiFinalize() called through ctypes after the stop;
- ours-notear: as ours with TEARDOWN_CUPTI=0 (CUPTI left attached, as a bare torch.profiler does);
- bare: a bare torch.profiler (CPU + CUDA, shapes), 5 steps, stopped.
Also one tiny launch's host cost before and after (CUPTI attached shows there).

Usage: python3 scripts/investigations/post_stop_blocks.py MODE [--model llama|resnet] [--blocks 3]
Prints one JSON line (ms, us)."""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import sys

import torch
from post_profiler_overhead import (
    per_launch_us,  # its folder is on the path of a script run from it
)


def build(model_name: str):
    torch.manual_seed(0)
    if model_name == "llama":
        from transformers import LlamaConfig, LlamaForCausalLM

        config = LlamaConfig(vocab_size=32000, hidden_size=1024, intermediate_size=2688, num_hidden_layers=4,
                             num_attention_heads=16, num_key_value_heads=4, max_position_embeddings=2048)
        model = LlamaForCausalLM(config).cuda().train()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
        ids = torch.randint(0, 32000, (4, 512), device="cuda")

        def step() -> None:
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = model(input_ids=ids, labels=ids).loss
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
        return step
    import torchvision

    model = torchvision.models.resnet50().cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(32, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (32,), device="cuda")

    def step() -> None:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return step


def timed(step, n: int) -> list[float]:
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
    for start, end in events:
        start.record()
        step()
        end.record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in events]


def cupti_finalize() -> str:
    """cuptiFinalize() on the libcupti torch loaded (found in /proc/self/maps)."""
    with open("/proc/self/maps") as maps:
        paths = sorted({line.split()[-1] for line in maps if "libcupti" in line})
    if not paths:
        return "no libcupti loaded"
    lib = ctypes.CDLL(paths[0], mode=getattr(os, "RTLD_NOLOAD", 4) | ctypes.RTLD_GLOBAL)
    torch.cuda.synchronize()
    return f"{os.path.basename(paths[0])}: cuptiFinalize -> {lib.cuptiFinalize()}"


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["control", "ours", "ours-finalize", "ours-notear", "bare"])
    p.add_argument("--model", choices=["llama", "resnet"], default="llama")
    p.add_argument("--blocks", type=int, default=3)
    p.add_argument("--steps", type=int, default=20, help="steps per block")
    args = p.parse_args()
    if args.mode == "ours-notear":
        os.environ["TEARDOWN_CUPTI"] = "0"
    step = build(args.model)
    tiny = torch.zeros(1, device="cuda")
    for _ in range(5):
        step()
    tiny_before = min(per_launch_us(tiny) for _ in range(3))
    before = [statistics.median(timed(step, args.steps)) for _ in range(args.blocks)]
    note = ""
    if args.mode == "bare":
        prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                  torch.profiler.ProfilerActivity.CUDA], record_shapes=True)
        prof.start()
        timed(step, 5)
        prof.stop()
    elif args.mode.startswith("ours"):
        from rooflinectl.capture.run.session import ProfilingSession

        session = ProfilingSession("cuda", profile_steps=5)
        session.start()
        timed(step, 6)  # 5 profiled, the 6th crosses the stop
        if args.mode == "ours-finalize":
            note = cupti_finalize()
    else:
        timed(step, 6)
    tiny_after = min(per_launch_us(tiny) for _ in range(3))
    after = [statistics.median(timed(step, args.steps)) for _ in range(args.blocks)]
    tiny_end = min(per_launch_us(tiny) for _ in range(3))
    if args.mode.startswith("ours"):
        session.finish()
        session.close()
    print("BLOCKS " + json.dumps({
        "mode": args.mode, "model": args.model, "TEARDOWN_CUPTI": os.environ.get("TEARDOWN_CUPTI"), "note": note,
        "tiny_before_us": round(tiny_before, 2), "tiny_after_us": round(tiny_after, 2), "tiny_end_us": round(tiny_end, 2),
        "before_ms": [round(t, 2) for t in before], "after_ms": [round(t, 2) for t in after],
        "ratio": round(statistics.median(after) / statistics.median(before), 3)}), flush=True)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
