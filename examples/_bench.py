"""What the before/after examples share: their --steps/--fixed/--time flags, the device, and the
step loop (profiled steps in a rooflinectl region, or `--time`: one "TIMING {json}" line that
scripts/advice_report.py reads).

Not an example itself: the examples import it as `from _bench import ...` (a script's folder is
first on sys.path both under `python examples/x.py` and `rooflinectl profile examples/x.py`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable

import torch

import rooflinectl


def device_and_dtype() -> tuple[str, torch.dtype]:
    """("cuda", bf16) on a GPU, ("cpu", fp32) without one."""
    if torch.cuda.is_available():
        return "cuda", torch.bfloat16
    return "cpu", torch.float32


def example_parser(doc: str | None) -> argparse.ArgumentParser:
    """A parser whose --help shows the example's docstring as written."""
    return argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)


def add_step_args(parser: argparse.ArgumentParser, fixed_help: str) -> None:
    """--steps and --fixed, the flags every before/after example takes (then add_time_arg)."""
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--fixed", action="store_true", help=fixed_help)


def add_time_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--time", action="store_true", help="time steps instead of profiling a region")


def time_steps_ms(step: Callable[[], object], steps: int, device: str) -> float:
    """Median milliseconds per step: CUDA events on a GPU (idle gaps included), perf_counter on CPU."""
    times = []
    for _ in range(steps):
        if device == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            step()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        else:
            t0 = time.perf_counter()
            step()
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def time_or_profile(example: str, step: Callable[[], object], args: argparse.Namespace, device: str,
                    min_timed_steps: int = 20) -> bool:
    """Run the (warmed-up) step: with --time, print the TIMING line of at least min_timed_steps
    steps and return True; else run args.steps steps, each in the region "step", and return False."""
    if args.time:
        ms = time_steps_ms(step, max(args.steps, min_timed_steps), device)
        print("TIMING " + json.dumps({"example": example, "fixed": args.fixed, "device": device, "step_ms": ms}))
        return True
    for _ in range(args.steps):
        with rooflinectl.region("step"):
            step()
    return False
