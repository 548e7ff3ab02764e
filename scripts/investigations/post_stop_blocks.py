"""Does anything of a stopped profiling session slow the steps after it? (issue 28)

One process: a training step timed in blocks before any profiler and after a session stopped at
its step limit, against a control that runs the same schedule with no profiler. The paired
statistic is the process's own after/before ratio (median of the after blocks' medians over the
before blocks'): it removes the level of the process (separate processes of the same host-bound
script differ by up to 1.77x on the H200 machine), and the control's ratio measures the drift of
the host within a process. scripts/investigations/post_stop_stats.py compares many processes.

Modes (the middle of the process, between the before and the after blocks):
- control: the same 6 steps, no profiler;
- ours: rooflinectl's ProfilingSession with the default sampling (`profile_steps="auto"`): it
  stops after 5 optimizer steps, the 6th crosses the stop; the optimizer hook (the marker) stays;
- ours-freeze: as ours, then gc.freeze() (moves every object alive into the permanent generation:
  what our objects would cost the cyclic GC is gone);
- ours-finalize (GPU): as ours, then cuptiFinalize() through ctypes;
- ours-notear (GPU): as ours with TEARDOWN_CUPTI=0 (CUPTI left attached);
- bare: a bare torch.profiler (CPU + CUDA activities, shapes), 5 steps, stopped.

Per block also: the time the cyclic GC took (gc.callbacks, the same in every mode), and after the
middle what stays installed (profiler flag, trace/profile functions, sys.monitoring tools, global
module and optimizer hooks, torch function modes, import finders, threads, objects the GC
tracks). On a GPU, one tiny launch's host cost before and after (CUPTI attached shows there).

Models: mlp (a few Linear layers + AdamW: host-bound on a CPU), llama (transformers' LlamaConfig,
random weights; --size tiny for a CPU), resnet (torchvision ResNet-50, GPU).

Usage: python3 scripts/investigations/post_stop_blocks.py MODE [--device cpu|cuda] [--model mlp|llama|resnet]
       [--blocks 8] [--steps 20]
Prints one line `BLOCKS {json}` (ms, us)."""

from __future__ import annotations

import argparse
import ctypes
import gc
import hashlib
import json
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))  # its neighbours, run from anywhere
MODES = ("control", "ours", "ours-freeze", "ours-finalize", "ours-notear", "bare")
MIDDLE_STEPS = 6  # the default sampling profiles 5 optimizer steps; the 6th runs across the stop


def build_mlp(device: str) -> Callable[[], None]:
    """Six Linear(64, 64) layers, ReLU, AdamW, batch 16: a step of ~100 tiny ops, host-bound."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[m for _ in range(6) for m in (torch.nn.Linear(64, 64), torch.nn.ReLU())]).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(16, 64, device=device)

    def step() -> None:
        model(x).square().mean().backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    return step


def build_llama(device: str, size: str) -> Callable[[], None]:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    big = size == "full"
    config = LlamaConfig(vocab_size=32000 if big else 1000, hidden_size=1024 if big else 64,
                         intermediate_size=2688 if big else 172, num_hidden_layers=4 if big else 2,
                         num_attention_heads=16 if big else 4, num_key_value_heads=4 if big else 2,
                         max_position_embeddings=2048)
    with torch.device(device):  # initialised where it runs: seconds less a process on a GPU
        model = LlamaForCausalLM(config).train()
    cuda = device == "cuda"
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True if cuda else None)
    ids = torch.randint(0, config.vocab_size, (4, 512) if big else (2, 32), device=device)

    def step() -> None:
        with torch.autocast(device, dtype=torch.bfloat16, enabled=cuda):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    return step


def build_resnet(device: str) -> Callable[[], None]:
    import torchvision

    model = torchvision.models.resnet50().to(device).to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(32, 3, 224, 224, device=device).to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (32,), device=device)

    def step() -> None:
        with torch.autocast(device, dtype=torch.bfloat16, enabled=device == "cuda"):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return step


class GcClock:
    """Time the cyclic GC takes, summed, and collections per generation (gc.callbacks)."""

    def __init__(self) -> None:
        self.total_s = 0.0
        self.collections = [0, 0, 0]
        self._began = 0.0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._began = time.perf_counter()
        else:
            self.total_s += time.perf_counter() - self._began
            self.collections[info["generation"]] += 1

    def read(self) -> tuple[float, list[int]]:
        return self.total_s, list(self.collections)


def timed_block(step: Callable[[], None], n: int, cuda: bool) -> list[float]:
    """n steps, ms each: CUDA events on the current stream on a GPU, the host clock on a CPU."""
    if cuda:
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
        for start, end in events:
            start.record()
            step()
            end.record()
        torch.cuda.synchronize()
        return [s.elapsed_time(e) for s, e in events]
    times = []
    for _ in range(n):
        began = time.perf_counter()
        step()
        times.append((time.perf_counter() - began) * 1e3)
    return times


class Reference:
    """A fixed host workload in C only (SHA-256 of a buffer that fits the cache): no Python
    bytecode, no torch, so nothing of ours can slow it; run around each block, it measures how
    fast this host runs at that moment (other tenants on the core, frequency), and a block's
    step divided by it cancels that to first order."""

    def __init__(self, target_ms: float) -> None:
        self.buffer = os.urandom(1 << 16)
        self.rounds = 1
        while self.run_ms() < target_ms / 4 and self.rounds < 1 << 20:
            self.rounds *= 2
        self.rounds = max(1, int(self.rounds * target_ms / max(min(self.run_ms() for _ in range(3)), 1e-3)))

    def run_ms(self) -> float:
        began = time.perf_counter()
        for _ in range(self.rounds):
            hashlib.sha256(self.buffer).digest()
        return (time.perf_counter() - began) * 1e3


def blocks(step: Callable[[], None], count: int, n: int, cuda: bool, clock: GcClock, ref: Reference) -> dict:
    """count blocks of n steps: each block's median and fastest step (ms; on a shared CPU the
    fastest is the step without other tenants' time in it), the reference run before and after
    it (ms, their mean) and GC time per step (ms)."""
    medians, minimums, refs, gc_ms = [], [], [], []
    allocator = allocator_counts(cuda)
    for _ in range(count):
        gc_before, _ = clock.read()
        ref_before = ref.run_ms()
        times = timed_block(step, n, cuda)
        refs.append((ref_before + ref.run_ms()) / 2)
        medians.append(statistics.median(times))
        minimums.append(min(times))
        gc_ms.append((clock.read()[0] - gc_before) * 1e3 / n)
    allocator = {k: v - allocator[k] for k, v in allocator_counts(cuda).items()}
    return {"medians": medians, "minimums": minimums, "refs": refs, "gc_ms_per_step": gc_ms, "allocator": allocator}


def allocator_counts(cuda: bool) -> dict[str, int]:
    """The CUDA caching allocator's calls to the driver so far (a step that frees and allocates
    device memory again each time pays for it on the host); empty on a CPU."""
    if not cuda:
        return {}
    stats = torch.cuda.memory_stats()
    return {k: int(stats.get(k, 0)) for k in ("num_device_alloc", "num_device_free", "num_alloc_retries")}


def normalised(side: dict) -> float:
    """The median over blocks of the block's median step over its reference run."""
    return statistics.median(m / r for m, r in zip(side["medians"], side["refs"], strict=True))


def installed_state() -> dict:
    """What stays installed that could cost a step: read the registries, not our own flags."""
    from torch.nn.modules import module as nn_module
    from torch.optim import optimizer as optim_module

    tools = None
    if hasattr(sys, "monitoring"):  # a tool's global events, and its local events on Module._call_impl
        code = torch.nn.Module._call_impl.__code__
        tools = {sys.monitoring.get_tool(t): [sys.monitoring.get_events(t), sys.monitoring.get_local_events(t, code)]
                 for t in range(6) if sys.monitoring.get_tool(t)}
    return {
        "profiler_on": bool(torch.autograd.profiler._is_profiler_enabled),
        "trace_fn": repr(sys.gettrace()), "profile_fn": repr(sys.getprofile()),
        "monitoring_tools": tools,
        "global_module_hooks": len(nn_module._global_forward_pre_hooks) + len(nn_module._global_forward_hooks),
        "optimizer_hooks": len(optim_module._global_optimizer_post_hooks),
        "torch_function_modes": torch._C._len_torch_function_stack(),
        "import_finders": sum(type(f).__module__.startswith("rooflinectl") for f in sys.meta_path),
        "threads": sorted(t.name for t in threading.enumerate()),
        "os_threads": len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else None,
        "gc_tracked": len(gc.get_objects()),
        "gc_frozen": gc.get_freeze_count(),
    }


def cupti_finalize() -> str:
    """cuptiFinalize() on the libcupti torch loaded (found in /proc/self/maps)."""
    with open("/proc/self/maps") as maps:
        paths = sorted({line.split()[-1] for line in maps if "libcupti" in line})
    if not paths:
        return "no libcupti loaded"
    lib = ctypes.CDLL(paths[0], mode=getattr(os, "RTLD_NOLOAD", 4) | ctypes.RTLD_GLOBAL)
    torch.cuda.synchronize()
    return f"{os.path.basename(paths[0])}: cuptiFinalize -> {lib.cuptiFinalize()}"


def middle(mode: str, device: str, step: Callable[[], None]) -> tuple[object, str]:
    """The mode's 6 steps between the before and the after blocks; (session or None, note)."""
    cuda = device == "cuda"
    if mode == "bare":
        activities = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if cuda else [])
        prof = torch.profiler.profile(activities=activities, record_shapes=True)
        prof.start()
        timed_block(step, MIDDLE_STEPS - 1, cuda)
        prof.stop()
        return prof, ""
    if not mode.startswith("ours"):
        timed_block(step, MIDDLE_STEPS, cuda)
        return None, ""
    from rooflinectl.capture.run.session import ProfilingSession

    session = ProfilingSession(device, profile_steps="auto")
    session.start()
    timed_block(step, MIDDLE_STEPS, cuda)
    note = "" if session.limit is not None and session.limit.stopped else "the session did not stop at its limit"
    if mode == "ours-finalize" and cuda:
        note = cupti_finalize()
    if mode == "ours-freeze":
        gc.collect()
        gc.freeze()
        note = f"gc.freeze(): {gc.get_freeze_count()} objects frozen"
    return session, note


def tiny_us(cuda: bool) -> float | None:
    """One tiny CUDA launch's host cost (us; min of 3 loops): CUPTI left attached shows here."""
    if not cuda:
        return None
    from post_profiler_overhead import per_launch_us

    tiny = torch.zeros(1, device="cuda")
    return round(min(per_launch_us(tiny) for _ in range(3)), 2)


def host_probes_us(n: int = 2000) -> dict[str, float]:
    """Host cost (us; min of 5 loops of n) of one CPU op (a RecordFunction callback or a torch
    function mode left on shows here) and of one nn.Module call (module hooks, sys.monitoring
    events): far less noisy than a whole step, and each names what would cost."""
    x, module = torch.zeros(1), torch.nn.Identity()

    def per_call_us(call: Callable[[], object]) -> float:
        best = float("inf")
        for _ in range(5):
            began = time.perf_counter()
            for _ in range(n):
                call()
            best = min(best, (time.perf_counter() - began) / n * 1e6)
        return round(best, 3)
    return {"cpu_op_us": per_call_us(lambda: x.add_(1)), "module_call_us": per_call_us(lambda: module(x))}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("mode", choices=MODES)
    p.add_argument("--device", choices=["cpu", "cuda"], default="cuda")
    p.add_argument("--model", choices=["mlp", "llama", "resnet"], default="llama")
    p.add_argument("--size", choices=["full", "tiny"], default=None, help="llama's size (default: full on cuda)")
    p.add_argument("--blocks", type=int, default=8, help="blocks before and after")
    p.add_argument("--steps", type=int, default=20, help="steps per block")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--finish", action="store_true", help="read the session's trace at the end (else exit at once)")
    return p.parse_args(argv)


def build(args: argparse.Namespace) -> Callable[[], None]:
    if args.model == "mlp":
        return build_mlp(args.device)
    if args.model == "llama":
        return build_llama(args.device, args.size or ("full" if args.device == "cuda" else "tiny"))
    return build_resnet(args.device)


def side(step: Callable[[], None], args: argparse.Namespace, clock: GcClock, ref: Reference) -> dict:
    """What stays installed, the probes, then the blocks: one side of the middle."""
    cuda = args.device == "cuda"
    state, tiny, probes = installed_state(), tiny_us(cuda), host_probes_us()
    return {"state": state, "tiny": tiny, "probes": probes, **blocks(step, args.blocks, args.steps, cuda, clock, ref)}


def row_of(args: argparse.Namespace, before: dict, after: dict, clock: GcClock, note: str, middle_s: float) -> dict:
    def ms(values: list[float]) -> list[float]:
        return [round(t, 4) for t in values]
    return {
        "mode": args.mode, "device": args.device, "model": args.model, "pid": os.getpid(), "note": note,
        "TEARDOWN_CUPTI": os.environ.get("TEARDOWN_CUPTI"), "blocks": args.blocks, "steps": args.steps,
        "before_ms": ms(before["medians"]), "after_ms": ms(after["medians"]),
        "before_min_ms": ms(before["minimums"]), "after_min_ms": ms(after["minimums"]),
        "before_ref_ms": ms(before["refs"]), "after_ref_ms": ms(after["refs"]),
        "gc_before_ms_per_step": round(statistics.fmean(before["gc_ms_per_step"]), 5),
        "gc_after_ms_per_step": round(statistics.fmean(after["gc_ms_per_step"]), 5),
        "gc_collections": clock.read()[1], "middle_s": round(middle_s, 3),
        "allocator_before": before["allocator"], "allocator_after": after["allocator"],
        "tiny_before_us": before["tiny"], "tiny_after_us": after["tiny"],
        "probes_before_us": before["probes"], "probes_after_us": after["probes"],
        "ratio": round(statistics.median(after["medians"]) / statistics.median(before["medians"]), 4),
        "ratio_min": round(statistics.median(after["minimums"]) / statistics.median(before["minimums"]), 4),
        "ratio_norm": round(normalised(after) / normalised(before), 4),
        "state_before": before["state"], "state_after": after["state"],
    }


def prepare(args: argparse.Namespace) -> Callable[[], None]:
    """The step, built and warmed up (`--warmup` steps)."""
    if args.device != "cuda":
        torch.set_num_threads(1)  # host-bound on a shared CPU: one thread, less noise
    step = build(args)
    timed_block(step, args.warmup, args.device == "cuda")
    return step


def measure(args: argparse.Namespace, step: Callable[[], None]) -> dict:
    """Before blocks, the mode's middle, after blocks: the process's row. The middle's session
    (if any) is left as it is after the stop (--finish reads its trace afterwards)."""
    cuda = args.device == "cuda"
    if args.mode == "ours-notear":
        os.environ["TEARDOWN_CUPTI"] = "0"
    warm_ms = statistics.median(timed_block(step, 3, cuda))
    ref = Reference(target_ms=max(0.5, 0.05 * warm_ms * args.steps))  # a tenth of the time, run twice a block
    clock = GcClock()
    before = side(step, args, clock, ref)
    began = time.perf_counter()
    held, note = middle(args.mode, args.device, step)
    middle_s = time.perf_counter() - began
    after = side(step, args, clock, ref)
    if args.finish and hasattr(held, "finish"):
        held.finish()
        held.close()
    return row_of(args, before, after, clock, note, middle_s)


def main(argv: list[str] | None = None, step: Callable[[], None] | None = None) -> None:
    """One process's figures as a BLOCKS line, then an exit at once (os._exit: what follows the
    blocks is not measured, so no trace export and no teardown). step: built already (a process
    forked from one that built and warmed it up: post_stop_rounds.py --prebuild, CPU only)."""
    args = parse_args(argv)
    row = measure(args, step if step is not None else prepare(args))
    print("BLOCKS " + json.dumps(row), flush=True)
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
