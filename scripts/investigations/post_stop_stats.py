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
from collections.abc import Callable

RESAMPLES = 4000
PROBES = ("cpu op", "module call", "tiny launch")
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


def _probe(name: str) -> Callable[[dict], float | None]:
    def log_ratio(row: dict) -> float | None:
        before, after = (row.get(f"probes_{side}_us") or {} for side in ("before", "after"))
        if not before.get(name) or not after.get(name):
            return None
        return math.log(after[name] / before[name])
    return log_ratio


def _tiny(row: dict) -> float | None:
    before, after = row.get("tiny_before_us"), row.get("tiny_after_us")
    return math.log(after / before) if before and after else None


# What is compared, each as a process's log(after / before): the step (the median of each block,
# or its fastest step: on a shared CPU the step with least of other tenants' time, or the block's
# median over a C-only reference workload run around it: how fast the host ran then), then probes of
# one call each (far less noisy, and each names what would cost: a RecordFunction callback or a
# torch function mode left on, module hooks or sys.monitoring events, CUPTI attached).
MEASURES: dict[str, Callable[[dict], float | None]] = {
    "step": lambda row: math.log(row["ratio"]),
    "fastest step": lambda row: math.log(row["ratio_min"]) if row.get("ratio_min") else None,
    "step / reference": lambda row: math.log(row["ratio_norm"]) if row.get("ratio_norm") else None,
    "cpu op": _probe("cpu_op_us"),
    "module call": _probe("module_call_us"),
    "tiny launch": _tiny,
}


def values(rows: list[dict], mode: str, measure: Callable[[dict], float | None]) -> list[float]:
    got = (measure(row) for row in rows if row["mode"] == mode)
    return [v for v in got if v is not None]


def round_differences(rows: list[dict], mode: str, measure: Callable[[dict], float | None]) -> list[float]:
    """`mode` - control, per round (one process of each, run back to back: rows carry "round";
    without it, the n-th process of each)."""
    def by_round(which: str) -> dict[int, float]:
        got = [r for r in rows if r["mode"] == which]
        return {r.get("round", i): v for i, r in enumerate(got) if (v := measure(r)) is not None}
    ours, control = by_round(mode), by_round("control")
    return [ours[k] - control[k] for k in sorted(ours) if k in control]


def verdict(low: float, high: float, bound_pct: float) -> str:
    if pct(high) <= bound_pct:
        return f"ok: at most {pct(high):+.1f}% slower after the stop than the control (bound +{bound_pct:g}%)"
    if pct(low) > 0:
        return f"FAILED: {pct(low):+.1f}% to {pct(high):+.1f}% slower after the stop than the control"
    return f"inconclusive: the interval {pct(low):+.1f}% to {pct(high):+.1f}% holds 0 but reaches past +{bound_pct:g}%"


def describe(rows: list[dict], mode: str) -> str:
    """One FIGURE line of a mode's processes: ratios, levels, GC, objects, probes."""
    got = [r for r in rows if r["mode"] == mode]
    ratios = sorted(r["ratio"] for r in got)
    before = [statistics.median(r["before_ms"]) for r in got]
    gc_before = statistics.median(r.get("gc_before_ms_per_step", 0.0) for r in got)
    gc_after = statistics.median(r.get("gc_after_ms_per_step", 0.0) for r in got)
    tracked = statistics.median(r["state_after"]["gc_tracked"] - r["state_before"]["gc_tracked"] for r in got)
    line = (f"FIGURE post-stop {mode}: {len(got)} processes, step after/before median {statistics.median(ratios):.3f} "
            f"(range {ratios[0]:.3f}-{ratios[-1]:.3f}); step before any profiler {min(before):.3f}-{max(before):.3f} "
            f"ms; GC {gc_before:.4f} -> {gc_after:.4f} ms/step; objects the GC tracks {tracked:+,.0f} after the middle")
    for name in ("cpu_op_us", "module_call_us"):
        pairs = [(r["probes_before_us"][name], r["probes_after_us"][name]) for r in got if r.get("probes_before_us")]
        if pairs:
            line += (f"; {name.removesuffix('_us').replace('_', ' ')} {statistics.median(a for a, _ in pairs):.3f} -> "
                     f"{statistics.median(b for _, b in pairs):.3f} us")
    allocs = [r["allocator_after"].get("num_device_alloc", 0) for r in got if r.get("allocator_after")]
    if allocs:
        line += f"; cudaMalloc calls in the after blocks (median) {statistics.median(allocs):g}"
    tiny = [(r["tiny_before_us"], r["tiny_after_us"]) for r in got if r.get("tiny_before_us") is not None]
    if tiny:
        line += (f"; tiny launch {statistics.median(t[0] for t in tiny):.2f} -> "
                 f"{statistics.median(t[1] for t in tiny):.2f} us")
    return line


def compare(rows: list[dict], mode: str, bound_pct: float, gap_pct: float | None = None) -> list[str]:
    """FIGURE lines of `mode` against the control, per measure; CHECK lines for the step and the probes."""
    lines, probe_verdicts = [], []
    for name, measure in MEASURES.items():
        ours, control = values(rows, mode, measure), values(rows, "control", measure)
        if len(ours) < 3 or len(control) < 3:
            if name == "step":
                lines.append(f"CHECK post-stop {mode}: FAILED: too few processes ({len(ours)} {mode}, "
                             f"{len(control)} control)")
            continue
        shift = hodges_lehmann(ours, control)
        low, high = shift_interval(ours, control)
        rounds = round_differences(rows, mode, measure)
        per_round = ""
        if len(rounds) >= 3:
            r_low, r_high = median_interval(rounds)
            per_round = (f"; per round: median {pct(statistics.median(rounds)):+.1f}% "
                         f"({pct(r_low):+.1f}% to {pct(r_high):+.1f}%, {len(rounds)} rounds)")
        lines.append(f"FIGURE post-stop {mode} vs control, {name} after/before: {pct(shift):+.1f}% (95% interval "
                     f"{pct(low):+.1f}% to {pct(high):+.1f}%; Hodges-Lehmann, {len(ours)} and {len(control)} "
                     f"processes){per_round}")
        if name == "step":
            lines.append(f"CHECK post-stop {mode} step: {verdict(low, high, bound_pct)}")
            if gap_pct is not None:
                said = "excluded" if pct(high) < gap_pct else "NOT excluded"
                lines.append(f"CHECK post-stop {mode} step: a cost of +{gap_pct:g}% (the smallest gap to a plain run "
                             f"seen on the H200) is {said} by the interval (upper end {pct(high):+.1f}%)")
        elif name in PROBES:
            probe_verdicts.append(f"{name} {verdict(low, high, bound_pct)}")
    if probe_verdicts:
        worst = "FAILED" if any(" FAILED:" in v for v in probe_verdicts) else \
            "inconclusive" if any(" inconclusive:" in v for v in probe_verdicts) else "ok"
        lines.append(f"CHECK post-stop {mode} probes: {worst} ({'; '.join(probe_verdicts)})")
    return lines


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("path")
    p.add_argument("--bound-pct", type=float, default=3.0, help="what 'nothing of ours costs' allows (percent)")
    p.add_argument("--gap-pct", type=float, default=None, help="also say whether the interval excludes a cost this large")
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
    threads = [(r["state_before"].get("os_threads"), r["state_after"].get("os_threads")) for r in rows if r["mode"] == "ours"]
    if threads and threads[0][0] is not None:
        print(f"FIGURE post-stop OS threads before -> after our stop (each process): {sorted(set(threads))}")
    states = {json.dumps({k: v for k, v in r["state_after"].items() if k not in ("gc_tracked", "gc_frozen", "os_threads")},
                         sort_keys=True) for r in rows if r["mode"] == "ours"}
    for state in states:
        print(f"FIGURE post-stop installed after our stop: {state}")
    failed = False
    for mode in modes:
        if mode == "control":
            continue
        lines = compare(rows, mode, args.bound_pct, args.gap_pct)
        if mode not in CHECKED:  # a mode that leaves something on on purpose: its figure only
            lines = [line for line in lines if not line.startswith("CHECK")]
        print("\n".join(lines))
        failed |= any(" FAILED" in line for line in lines if line.startswith("CHECK"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
