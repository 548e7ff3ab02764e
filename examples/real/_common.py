"""What the real-workload scripts share: argument helpers, per-iteration CUDA-event timing and
the one "TIMING {json}" line they print (ground truth for rooflinectl's per-iteration figures).

These scripts are plain user programs: they do not import rooflinectl, so profiling them shows
what a user who never heard of our regions would see.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable

import torch


def parser(doc: str | None) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--warmup", type=int, default=3, help="untimed iterations first")
    p.add_argument("--steps", type=int, default=5, help="timed iterations")
    p.add_argument("--compile", choices=["none", "default", "reduce-overhead", "max-autotune"], default="none")
    p.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto")
    return p


def pick_device(choice: str) -> str:
    if choice == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return choice


def maybe_compile(fn: Callable, mode: str) -> Callable:
    if mode == "none":
        return fn
    return torch.compile(fn, mode=None if mode == "default" else mode)


def training_step(fwd_bwd: Callable[[], torch.Tensor], optimizer: torch.optim.Optimizer,
                  compile_mode: str) -> Callable[[], torch.Tensor]:
    """One training step: zero the gradients, the (maybe compiled) forward and backward, the
    optimizer's step; returns the loss. The optimizer stays eager, as in most training scripts."""
    compiled = maybe_compile(fwd_bwd, compile_mode)

    def step() -> torch.Tensor:
        optimizer.zero_grad(set_to_none=True)
        loss = compiled()
        optimizer.step()
        return loss

    return step


def run_loop(name: str, step: Callable[[], object], warmup: int, steps: int, device: str,
             extra: dict | None = None) -> object:
    """Warm up, then time each step (CUDA events on a GPU, host clock on CPU); print TIMING."""
    out = None
    for _ in range(warmup):
        out = step()
    if device == "cuda":
        torch.cuda.synchronize()
    times_ms: list[float] = []
    wall0 = time.perf_counter()
    if device == "cuda":
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(steps)]
        for start, end in events:
            start.record()
            out = step()
            end.record()
        torch.cuda.synchronize()
        times_ms = [s.elapsed_time(e) for s, e in events]
    else:
        for _ in range(steps):
            t0 = time.perf_counter()
            out = step()
            times_ms.append((time.perf_counter() - t0) * 1e3)
    wall_ms = (time.perf_counter() - wall0) * 1e3
    record = {"example": name, "device": device, "iter_ms": times_ms,
              "median_ms": statistics.median(times_ms) if times_ms else None, "loop_wall_ms": wall_ms}
    record.update(extra or {})
    print("TIMING " + json.dumps(record), flush=True)
    return out


def digest(t: torch.Tensor) -> dict:
    """A few numbers that say whether two runs computed the same output."""
    f = t.detach().float()
    return {"sum": float(f.sum()), "abs_sum": float(f.abs().sum()), "first": [float(v) for v in f.flatten()[:4]]}
