"""What rooflinectl's nn.Module scopes cost (issues 9 and 15): figures for docs/benchmarks/steady-state.md.

python scripts/bench_module_scopes.py [--repeats 5] [--profiles 3]

1. Per module call, under a CPU torch.profiler recording shapes (as rooflinectl records): a chain of
   500 nn.Identity modules called with no scopes, with scopes opened through the dispatched
   `torch.ops.profiler` record-function ops (the way before), and through `_RecordFunctionFast`
   (the way now); and one scope's enter + exit alone, each way. Min over the repeats (the least
   disturbed run), microseconds.
2. `rooflinectl profile` of a small CPU script whose step is many small module calls (a generated
   script, see WORKLOAD), run as is, with op scopes and with no scopes (scripts/profile_variant.py):
   the step time the script measures itself while profiled (its median, ms) and the wall time of
   the whole command (s); min over the profiles (the variants alternate), and the plain script's
   for reference.
"""

from __future__ import annotations

import argparse
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from rooflinectl.capture.run import modules

CHAIN = 500  # modules per forward (plus the Sequential itself)
CALLS = 20  # forwards per timed repeat
ROOT = Path(__file__).resolve().parents[1]

# The profiled user script: 40 blocks of (Linear 16x16, ReLU, LayerNorm) on a [4, 16] batch, 121
# module calls and ~200 aten ops a step: launch-bound like an eager training step. It prints the
# median of its own step times.
WORKLOAD = '''
import statistics, time
import torch
blocks = [torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU(), torch.nn.LayerNorm(16)) for _ in range(40)]
model = torch.nn.Sequential(*blocks)
x = torch.randn(4, 16)
times = []
with torch.no_grad():
    for _ in range(100):
        start = time.perf_counter()
        model(x)
        times.append(time.perf_counter() - start)
print(f"STEP_MS {statistics.median(times) * 1e3:.4f}")
'''


def _per_call_s(model: torch.nn.Module, x: torch.Tensor) -> float:
    start = time.perf_counter()
    for _ in range(CALLS):
        model(x)
    return (time.perf_counter() - start) / CALLS / (CHAIN + 1)


def _enter_exit_s(fast: bool, n: int = 20000) -> float:
    scopes = modules._Scopes(fast=fast)
    start = time.perf_counter()
    for _ in range(n):
        scopes.close(scopes.open("rooflinectl.module:Net.fc"))
    return (time.perf_counter() - start) / n


def scope_costs(repeats: int) -> dict[str, float]:
    """Seconds per module call (no scopes, op scopes, fast scopes) and per enter + exit (op, fast)."""
    model = torch.nn.Sequential(*[torch.nn.Identity() for _ in range(CHAIN)])
    x = torch.ones(1)
    out: dict[str, float] = {}
    prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True)
    prof.start()
    try:
        _per_call_s(model, x)
        out["call_no_scopes_s"] = min(_per_call_s(model, x) for _ in range(repeats))
        for label, fast in (("op", False), ("fast", True)):
            modules.FAST_SCOPES = fast
            with modules.module_scopes():
                _per_call_s(model, x)
                out[f"call_{label}_scopes_s"] = min(_per_call_s(model, x) for _ in range(repeats))
            out[f"enter_exit_{label}_s"] = min(_enter_exit_s(fast) for _ in range(repeats))
    finally:
        modules.FAST_SCOPES = True
        prof.stop()
    return out


VARIANTS = {"plain": "plain python (no profiler)", "no-modules": "rooflinectl profile, no scopes",
            "op-scopes": "rooflinectl profile, op scopes", "as-is": "rooflinectl profile (fast scopes)"}


def profiled_run(variant: str, script: Path, out_dir: Path) -> tuple[float, float]:
    """(step ms the script printed, wall s of the command); variant: a key of VARIANTS."""
    if variant == "plain":
        cmd = [sys.executable, str(script)]
    else:
        head = [sys.executable, "-m", "rooflinectl", "profile"] if variant == "as-is" else \
            [sys.executable, str(ROOT / "scripts" / "profile_variant.py"), variant]
        cmd = [*head, str(script), "-q", "-o", str(out_dir / f"{variant}.profile.json")]
    start = time.perf_counter()
    done = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=out_dir)
    wall_s = time.perf_counter() - start
    line = next(x for x in (done.stdout + done.stderr).splitlines() if x.startswith("STEP_MS "))
    return float(line.split()[1]), wall_s


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--profiles", type=int, default=3)
    args = parser.parse_args()
    if not modules.FAST_SCOPES:
        print("this torch has no _RecordFunctionFast: nothing to compare", file=sys.stderr)
        return 1
    print(f"# {platform.processor() or platform.machine()}, Python {platform.python_version()}, "
          f"torch {torch.__version__}, {'sys.monitoring' if modules.uses_monitoring() else 'global hooks'}")
    costs = scope_costs(args.repeats)
    base = costs["call_no_scopes_s"]
    print(f"per module call (us, min of {args.repeats}): no scopes {base * 1e6:.2f}, "
          f"op scopes {costs['call_op_scopes_s'] * 1e6:.2f} (+{(costs['call_op_scopes_s'] - base) * 1e6:.2f}), "
          f"fast scopes {costs['call_fast_scopes_s'] * 1e6:.2f} (+{(costs['call_fast_scopes_s'] - base) * 1e6:.2f})")
    print(f"one scope's enter + exit (us, min of {args.repeats}): op {costs['enter_exit_op_s'] * 1e6:.2f}, "
          f"fast {costs['enter_exit_fast_s'] * 1e6:.2f}")
    if args.profiles > 0:
        runs: dict[str, list[tuple[float, float]]] = {v: [] for v in VARIANTS}
        with tempfile.TemporaryDirectory() as tmp:
            script = Path(tmp) / "many_modules.py"
            script.write_text(WORKLOAD)
            for _ in range(args.profiles):  # variants alternate, so drift hits them alike
                for variant in VARIANTS:
                    runs[variant].append(profiled_run(variant, script, Path(tmp)))
        for variant, label in VARIANTS.items():
            print(f"{label}: step {min(r[0] for r in runs[variant]):.3f} ms, "
                  f"command {min(r[1] for r in runs[variant]):.2f} s (min of {args.profiles})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
