"""The default `rooflinectl profile` against plain runs of the same script, alternated (issue 28).

Usage: python3 scripts/investigations/alternate_plain_profiled.py OUT_DIR [--only NAME ...]
       [--rounds N] [--budget-s S] [--device cuda|cpu] [--small]

One plain process and one profiled process give one pair of steps, and on this host separate
plain processes of a host-bound script differ by up to 1.45-1.77x (docs/benchmarks/steady-state.md):
one pair says little. Here each round runs the script plain and under the default profile, in
alternating order (plain first in even rounds), so drift of the host hits both sides alike. Per
process: the plain run's median step (its own CUDA events) or the profile's un-profiled step
(median of the steps timed after the profiler stopped), the launch saving `advise` claims per step
and the profile's kernel busy time per step. Printed as FIGURE lines:
- the medians of both sides over the rounds, their ratio and a 95% bootstrap interval of it
  (post_stop_stats.shift_interval: the Hodges-Lehmann shift of log step times);
- the spread of the plain processes (max / min), the floor one pair of processes cannot beat;
- the claimed launch saving per step against the median plain step - kernel busy per step.
Writes OUT_DIR/alternate.json. Workloads and their arguments: scripts/bench_steady_default.py.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_steady_default import REAL, WORKLOADS, _claimed_s, _launch_findings, _run, _timing  # noqa: E402
from post_stop_stats import shift_interval  # noqa: E402

WARMUP, STEPS = 3, 30  # 33 iterations: 5 profiled (auto), 27 timed without the profiler


def plain(name: str, out: Path, argv: list[str], tag: str) -> dict[str, Any] | None:
    script = Path(REAL) / WORKLOADS[name][0]
    code, wall_s, text = _run([sys.executable, str(script), *argv], out / f"{name}.{tag}.plain.log")
    timing = _timing(text)
    if code or timing is None:
        print(f"FIGURE {name} {tag}: plain run failed (exit {code})")
        return None
    return {"side": "plain", "step_s": statistics.median(timing["iter_ms"]) / 1e3, "wall_s": wall_s}


def profiled(name: str, out: Path, argv: list[str], tag: str, device: str) -> dict[str, Any] | None:
    script = Path(REAL) / WORKLOADS[name][0]
    profile = out / f"{name}.{tag}.profile.json"
    code, wall_s, _ = _run([sys.executable, "-m", "rooflinectl", "profile", str(script), "-q", "-o", str(profile),
                            "--device", device, "--", *argv], out / f"{name}.{tag}.profile.log")
    if code or not profile.is_file():
        print(f"FIGURE {name} {tag}: profile failed (exit {code})")
        return None
    s = json.loads(profile.read_text())["summary"]
    acode, _, atext = _run([sys.executable, "-m", "rooflinectl", "advise", str(profile), "--format", "json"],
                           out / f"{name}.{tag}.advice.log")
    try:
        advice = json.JSONDecoder().raw_decode(atext[atext.index("{"):])[0] if "{" in atext else {}
    except ValueError:
        advice = {}
    iterations = s.get("iterations") or 1
    step_s = s.get("unprofiled_step_time_s")
    return {"side": "profiled", "step_s": step_s, "wall_s": wall_s, "unprofiled_steps": s.get("unprofiled_steps"),
            "busy_per_step_s": (s.get("device_busy_s") or 0.0) / iterations,
            "claimed_per_step_s": sum(_claimed_s(f) for f in _launch_findings(advice)) / iterations}


def summarise(name: str, rows: list[dict[str, Any]]) -> None:
    plains = [r["step_s"] for r in rows if r["side"] == "plain" and r["step_s"]]
    ours = [r["step_s"] for r in rows if r["side"] == "profiled" and r["step_s"]]
    if len(plains) < 2 or len(ours) < 2:
        print(f"FIGURE {name}: too few processes ({len(plains)} plain, {len(ours)} profiled)")
        return
    p_med, o_med = statistics.median(plains), statistics.median(ours)
    low, high = shift_interval([math.log(x) for x in ours], [math.log(x) for x in plains])
    print(f"FIGURE {name} step: un-profiled {o_med * 1e3:.3f} ms (median of {len(ours)} processes) vs plain "
          f"{p_med * 1e3:.3f} ms (median of {len(plains)}): {100 * (o_med / p_med - 1):+.1f}% "
          f"(95% interval {100 * math.expm1(low):+.1f}% to {100 * math.expm1(high):+.1f}%)")
    print(f"FIGURE {name} floor: plain processes {min(plains) * 1e3:.3f}-{max(plains) * 1e3:.3f} ms "
          f"(max/min {max(plains) / min(plains):.2f}); profiled {min(ours) * 1e3:.3f}-{max(ours) * 1e3:.3f} ms")
    prof = [r for r in rows if r["side"] == "profiled" and r["step_s"]]
    busy = statistics.median(r["busy_per_step_s"] for r in prof)
    claimed = statistics.median(r["claimed_per_step_s"] for r in prof)
    idle = max(p_med - busy, 0.0)
    ratio = f"{claimed / idle:.2f}" if idle > 0 else "n/a"
    print(f"FIGURE {name} launch: claimed saving {claimed * 1e3:.3f} ms/step (median of {len(prof)} profiles) vs "
          f"median plain step - kernel busy {idle * 1e3:.3f} ms/step (busy {busy * 1e3:.3f} ms): ratio {ratio}")
    lo_pct, hi_pct = 100 * math.expm1(low), 100 * math.expm1(high)
    if lo_pct >= -3 and hi_pct <= 3:
        verdict = "ok: the interval lies within 3%"
    elif lo_pct > 3 or hi_pct < -3:
        verdict = "no: the interval excludes 3%"
    else:
        verdict = f"inconclusive: the interval {lo_pct:+.1f}% to {hi_pct:+.1f}% holds values within 3% and beyond"
    print(f"CHECK {name} un-profiled step vs plain: {verdict}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", type=Path)
    p.add_argument("--only", nargs="*", default=["llama-train"])
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--budget-s", type=float, default=240.0, help="no new round after this many seconds")
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    p.add_argument("--small", action="store_true", help="tiny sizes (a CPU check of this script)")
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    start, results = time.monotonic(), {}
    for name in args.only:
        argv = [*WORKLOADS[name][2 if args.small else 1], "--warmup", str(WARMUP), "--steps", str(STEPS),
                "--device", args.device]
        rows: list[dict[str, Any]] = []
        for round_ in range(args.rounds):
            if time.monotonic() - start > args.budget_s:
                print(f"-- {name}: budget reached after {round_} rounds")
                break
            sides = ("plain", "profiled") if round_ % 2 == 0 else ("profiled", "plain")
            for side in sides:
                tag = f"r{round_}"
                row = plain(name, args.out, argv, tag) if side == "plain" else \
                    profiled(name, args.out, argv, tag, args.device)
                if row is not None:
                    rows.append({**row, "round": round_})
                    print(f"round {round_} {side}: step {(row['step_s'] or 0) * 1e3:.3f} ms, wall {row['wall_s']:.1f} s")
        summarise(name, rows)
        results[name] = rows
    (args.out / "alternate.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
