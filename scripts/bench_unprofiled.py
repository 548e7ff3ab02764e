"""The un-profiled step time of `rooflinectl profile --profile-steps N` against the script's own
CUDA events, for issues 9 and 15 (scripts/gpu.d/66-unprofiled.sh runs it on the H200 machine).

Usage: python3 scripts/bench_unprofiled.py OUT_DIR [--rounds R] [--only NAME ...] [--steps S]
                                             [--pin CPUS]

For each workload, R rounds of: the script plain (no profiler) and under `rooflinectl profile
--profile-steps N`, plain first in odd rounds and profiled first in even ones (a host that drifts
during the run then moves both sides alike). --steps overrides the timed steps; --pin runs both
under `taskset -c CPUS` (the same cores for both, against a host-bound step's scheduling noise).
Each run prints its TIMING line (examples/real/_common.py: CUDA events around
each timed step). Compared, over the same iterations (the ones rooflinectl timed after its
profiler stopped, see capture/run/step_limit.py for which):
- ours: the profile's unprofiled_step_time_s (median of the steps it timed);
- same run: the median of the script's own CUDA events for those steps in the profiled run;
- plain: the median of the plain run's CUDA events for the same step numbers;
- profiled: the profile's steady-state step (the first N iterations, under the profiler).
Writes OUT_DIR/unprofiled.md and unprofiled.json; prints the markdown. The target: ours within 5%
of the script's CUDA events, on the same run and on the plain run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench_distributed import timing_lines  # scripts/ is on the path of a script run from it

DDP_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}

# name: (script, its args, warm-up steps, timed steps, --profile-steps, marker, processes)
WORKLOADS: dict[str, tuple[str, list[str], int, int, int, str, int]] = {
    "resnet50-train": ("examples/real/resnet_train.py", ["--batch", "64"], 3, 20, 8, "optimizer_step", 1),
    "resnet50-train-b256": ("examples/real/resnet_train.py", ["--batch", "256"], 3, 20, 8, "optimizer_step", 1),
    # compiled: the forward and backward of ResNet-50 through torch.compile, the optimizer eager (its
    # steps are the marker); GPT-2's compiled forward is a function, so no iteration is seen live
    "resnet50-train-compiled": ("examples/real/resnet_train.py", ["--batch", "64", "--compile", "default"], 3, 20, 8,
                                "optimizer_step", 1),
    "gpt2-forward-compiled": ("examples/real/gpt2_forward.py", ["--layers", "12", "--batch", "8", "--seq", "1024",
                                                                "--compile", "default"], 3, 20, 8, "module_forward", 1),
    "gpt2-forward": ("examples/real/gpt2_forward.py", ["--layers", "12", "--batch", "8", "--seq", "1024"],
                     3, 20, 8, "module_forward", 1),
    "ddp-gpt2-train": ("examples/real/ddp_train.py", ["--model", "gpt2", "--layers", "12", "--batch", "8",
                                                      "--seq", "1024", "--bucket-mb", "25"], 3, 20, 8,
                       "optimizer_step", 2),
}


def timings(log: Path) -> dict[int, list[float]]:
    """rank (0 for one process) -> the iter_ms of the TIMING line it printed in the run's log."""
    return {rank: [float(t) for t in record["iter_ms"]] for rank, record in timing_lines(log).items()}


def same_steps(iter_ms: list[float], timed: int, marker: str) -> list[float]:
    """The script's times of the iterations rooflinectl timed: its last `timed` optimizer steps;
    for module calls, the forwards before the last one (the last call closes no interval)."""
    return iter_ms[-timed:] if marker == "optimizer_step" else iter_ms[-timed - 1:-1]


def run(command: list[str], log: Path, env: dict[str, str]) -> Path:
    """Run the command; its output goes to the log file, whose path comes back."""
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=400)
    text = done.stdout + done.stderr
    log.write_text(text)
    if done.returncode != 0:
        print(f"exit {done.returncode}: {' '.join(command)}\n{text[-2000:]}", file=sys.stderr)
    return log


def measure(name: str, out: Path, rounds: int, steps_override: int | None = None,
            pin: str | None = None) -> list[dict[str, Any]]:
    script, args, warmup, steps, limit, marker, nproc = WORKLOADS[name]
    steps = steps_override or steps
    script_args = [*args, "--warmup", str(warmup), "--steps", str(steps)]
    env = {**os.environ, **DDP_ENV}
    launcher = ["-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}"] if nproc > 1 else []
    taskset = ["taskset", "-c", pin] if pin else []
    plain = [*taskset, sys.executable, *launcher, script, *script_args]

    def profile_path(r: int, rank: int | str) -> Path:
        return out / (f"{name}.r{r}.rank{rank}.json" if nproc > 1 else f"{name}.r{r}.json")

    rows = []
    for r in range(1, rounds + 1):
        ranks = ["--nproc-per-node", str(nproc)] if nproc > 1 else []
        profiled = [*taskset, sys.executable, "-m", "rooflinectl", "profile", *ranks, "--profile-steps", str(limit),
                    "-o", str(profile_path(r, "{rank}")), script, "--", *script_args]
        if r % 2:
            plain_ms = timings(run(plain, out / f"{name}.plain{r}.log", env))
            prof_ms = timings(run(profiled, out / f"{name}.profiled{r}.log", env))
        else:
            prof_ms = timings(run(profiled, out / f"{name}.profiled{r}.log", env))
            plain_ms = timings(run(plain, out / f"{name}.plain{r}.log", env))
        for rank in range(nproc):
            path = profile_path(r, rank)
            if not path.exists():
                continue
            s = json.loads(path.read_text())["summary"]
            timed = int(s.get("unprofiled_steps") or 0)
            ours = s.get("unprofiled_step_time_s")
            row = {"workload": name, "round": r, "rank": rank, "marker": s.get("profile_steps_marker"),
                   "profile_steps": limit, "timed": timed, "ours_ms": ours * 1e3 if ours else None,
                   "profiled_ms": (s.get("iteration_time_s") or 0) * 1e3,
                   "same_run_ms": None, "plain_ms": None}
            if timed and rank in prof_ms:
                row["same_run_ms"] = statistics.median(same_steps(prof_ms[rank], timed, marker))
            if timed and rank in plain_ms:
                row["plain_ms"] = statistics.median(same_steps(plain_ms[rank], timed, marker))
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def _pct(a: float | None, b: float | None) -> str:
    return f"{(a / b - 1) * 100:+.1f}%" if a and b else "-"


def _ms(v: float | None) -> str:
    return f"{v:.2f} ms" if v else "-"


def markdown(rows: list[dict[str, Any]], device: str) -> str:
    lines = [f"`python3 {' '.join(sys.argv)}` on {device}, {dt.date.today().isoformat()}.", "",
             "| workload | round | rank | profiled (first N) | un-profiled, ours | script's CUDA events, same run | vs ours "
             "| plain run, same steps | vs ours |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['workload']} (N={r['profile_steps']}, {r['timed']} timed, {r['marker']}) | {r['round']} "
                     f"| {r['rank']} | {_ms(r['profiled_ms'])} | {_ms(r['ours_ms'])} | {_ms(r['same_run_ms'])} "
                     f"| {_pct(r['ours_ms'], r['same_run_ms'])} | {_ms(r['plain_ms'])} | {_pct(r['ours_ms'], r['plain_ms'])} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--only", nargs="*", default=list(WORKLOADS))
    parser.add_argument("--steps", type=int, help="timed steps (default: the workload's)")
    parser.add_argument("--pin", help="CPU list for taskset -c, the same for both runs")
    ns = parser.parse_args()
    ns.out.mkdir(parents=True, exist_ok=True)
    rows = [row for name in ns.only for row in measure(name, ns.out, ns.rounds, ns.steps, ns.pin)]
    try:
        import torch

        device = f"{torch.cuda.get_device_name()} (torch {torch.__version__})" if torch.cuda.is_available() else "CPU"
    except Exception:  # noqa: BLE001 - the device name is only a label
        device = "unknown device"
    text = markdown(rows, device)
    (ns.out / "unprofiled.md").write_text(text)
    (ns.out / "unprofiled.json").write_text(json.dumps(rows, indent=1))
    print(text)


if __name__ == "__main__":
    main()
