"""Many processes of post_stop_blocks.py, compared: does a stopped session of ours slow the steps
after it, beyond the host's own drift within a process?

Each process gives one paired figure, its after/before ratio (its own level cancels). The
effect of a mode against the control is the Hodges-Lehmann shift of the log ratios (the median
of every ours - control difference), shown as a percentage, with a 95% bootstrap interval
(processes resampled within each mode, seeded: the same file gives the same figures). Rounds
(one process of each mode, run back to back) are also paired: the median of the per-round
differences, so a slow change of the host over minutes cancels too.

Usage: python3 scripts/investigations/post_stop_stats.py blocks.jsonl [--against ours] [--bound-pct 3]
Prints FIGURE and CHECK lines (the GPU piece scripts/gpu.d/64-post-stop.sh calls it)."""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
from collections import defaultdict

RESAMPLES = 4000
CHECKED = ("ours", "ours-freeze")  # modes held to the bound (the others leave CUPTI attached on purpose)


def load(path: str) -> list[dict]:
    """The BLOCKS rows of a file (other lines, and rows that do not parse, are skipped)."""
    rows = []
    with open(path) as handle:
        for line in handle:
            if not line.startswith("BLOCKS "):
                continue
            try:
                row = json.loads(line.split(" ", 1)[1])
            except ValueError:
                continue
            if row.get("ratio", 0) > 0:
                rows.append(row)
    return rows


def hodges_lehmann(a: list[float], b: list[float]) -> float:
    """The median of every a_i - b_j: the shift of a over b."""
    return statistics.median(x - y for x in a for y in b)


def shift_interval(a: list[float], b: list[float], seed: int = 0) -> tuple[float, float]:
    """95% percentile bootstrap interval of hodges_lehmann(a, b), each group resampled in itself."""
    rng = random.Random(seed)
    shifts = sorted(hodges_lehmann(rng.choices(a, k=len(a)), rng.choices(b, k=len(b))) for _ in range(RESAMPLES))
    return shifts[int(0.025 * RESAMPLES)], shifts[int(0.975 * RESAMPLES) - 1]


def median_interval(values: list[float], seed: int = 0) -> tuple[float, float]:
    rng = random.Random(seed)
    medians = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(RESAMPLES))
    return medians[int(0.025 * RESAMPLES)], medians[int(0.975 * RESAMPLES) - 1]


def pct(log_ratio: float) -> float:
    return 100 * (math.exp(log_ratio) - 1)


def round_differences(rows: list[dict], mode: str, control: str = "control") -> list[float]:
    """log ratio of `mode` - log ratio of the control, per round (the n-th process of each)."""
    by_mode: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        by_mode[row["mode"]].append(math.log(row["ratio"]))
    return [x - y for x, y in zip(by_mode[mode], by_mode[control], strict=False)]


def describe(rows: list[dict], mode: str) -> str:
    got = [r for r in rows if r["mode"] == mode]
    ratios = sorted(r["ratio"] for r in got)
    before = [statistics.median(r["before_ms"]) for r in got]
    gc_before = statistics.median(r.get("gc_before_ms_per_step", 0.0) for r in got)
    gc_after = statistics.median(r.get("gc_after_ms_per_step", 0.0) for r in got)
    tracked = statistics.median(r["state_after"]["gc_tracked"] - r["state_before"]["gc_tracked"] for r in got)
    line = (f"FIGURE post-stop {mode}: {len(got)} processes, after/before median {statistics.median(ratios):.3f} "
            f"(range {ratios[0]:.3f}-{ratios[-1]:.3f}); step before any profiler {min(before):.3f}-{max(before):.3f} ms; "
            f"GC {gc_before:.4f} -> {gc_after:.4f} ms/step; objects the GC tracks {tracked:+,.0f} after the middle")
    tiny = [(r["tiny_before_us"], r["tiny_after_us"]) for r in got if r.get("tiny_before_us") is not None]
    if tiny:
        line += (f"; tiny launch {statistics.median(t[0] for t in tiny):.2f} -> "
                 f"{statistics.median(t[1] for t in tiny):.2f} us")
    return line


def compare(rows: list[dict], mode: str, bound_pct: float) -> list[str]:
    """FIGURE and CHECK lines of `mode` against the control."""
    ours = [math.log(r["ratio"]) for r in rows if r["mode"] == mode]
    control = [math.log(r["ratio"]) for r in rows if r["mode"] == "control"]
    if len(ours) < 3 or len(control) < 3:
        return [f"CHECK post-stop {mode}: FAILED: too few processes ({len(ours)} {mode}, {len(control)} control)"]
    shift = hodges_lehmann(ours, control)
    low, high = shift_interval(ours, control)
    lines = [f"FIGURE post-stop {mode} vs control: after/before {pct(shift):+.1f}% (95% interval {pct(low):+.1f}% to "
             f"{pct(high):+.1f}%; Hodges-Lehmann, {len(ours)} and {len(control)} processes)"]
    rounds = round_differences(rows, mode)
    if len(rounds) >= 3:
        r_low, r_high = median_interval(rounds)
        lines.append(f"FIGURE post-stop {mode} - control per round: median {pct(statistics.median(rounds)):+.1f}% "
                     f"(95% interval {pct(r_low):+.1f}% to {pct(r_high):+.1f}%; {len(rounds)} rounds)")
    if pct(high) <= bound_pct:
        verdict = f"ok: after the stop, steps at most {pct(high):+.1f}% slower than the control's (bound {bound_pct}%)"
    elif pct(low) > 0:
        verdict = f"FAILED: steps after the stop {pct(low):+.1f}% to {pct(high):+.1f}% slower than the control's"
    else:
        verdict = (f"inconclusive: the interval {pct(low):+.1f}% to {pct(high):+.1f}% holds 0 but reaches past "
                   f"+{bound_pct}%")
    lines.append(f"CHECK post-stop {mode}: {verdict}")
    return lines


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("path")
    p.add_argument("--bound-pct", type=float, default=3.0, help="what 'nothing of ours costs' allows (percent)")
    args = p.parse_args()
    rows = load(args.path)
    if not rows:
        print(f"CHECK post-stop: FAILED: no BLOCKS rows in {args.path}")
        return 1
    modes = list(dict.fromkeys(r["mode"] for r in rows))
    for mode in modes:
        print(describe(rows, mode))
    before = [statistics.median(r["before_ms"]) for r in rows]
    print(f"FIGURE post-stop floor: {len(before)} processes' steps before any profiler: {min(before):.3f}-"
          f"{max(before):.3f} ms (max/min {max(before) / min(before):.2f})")
    states = {json.dumps({k: v for k, v in r["state_after"].items() if k not in ("gc_tracked", "gc_frozen")},
                         sort_keys=True) for r in rows if r["mode"] == "ours"}
    for state in states:
        print(f"FIGURE post-stop installed after our stop: {state}")
    failed = False
    for mode in modes:
        if mode == "control":
            continue
        lines = compare(rows, mode, args.bound_pct)
        if mode not in CHECKED:  # a mode that leaves something on on purpose: its figure only
            lines = [line for line in lines if not line.startswith("CHECK")]
        print("\n".join(lines))
        failed |= any(" FAILED" in line for line in lines if line.startswith("CHECK"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
