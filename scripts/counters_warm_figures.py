"""FIGURE lines for scripts/gpu.d/75-counters-warm.sh (issue 29: counters decide the memory level).

python scripts/counters_warm_figures.py NAME PROFILE.json
    a profile made with `--counters ncu` (warm run included): the warm run's status, how many
    memory-bound groups the warm counters decided and the share of memory-bound time where the
    analytic guess agrees (target >= 90%), groups cache-served by counters and by the analytic
    guess, rows above the roof they are held to by more than 3% (with the counters' levels and with
    the analytic ones), and the disagreeing groups by time. CHECK ok when agreement >= 90%.
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd

from rooflinectl.analysis.counter_levels import ceilings_binding_share, level_agreement
from rooflinectl.analysis.roofline import place_on_roofline
from rooflinectl.outputs.profile_file import load_profile

TOLERANCE = 1.03
TARGET = 0.9


def above(table: pd.DataFrame) -> tuple[int, float]:
    known = table[table["cost_source"] != "none"]
    return int((known["efficiency"] > TOLERANCE).sum()), float(known["efficiency"].max())


def distribution(name: str, t: pd.DataFrame, ceilings) -> None:
    """Where the decided memory-bound time sits in warm DRAM bytes / bytes, and the share at which
    DRAM's term binds (DRAM roof / L2 roof: set by the roofs, not chosen)."""
    decided = t[(t["memory_level_source"] == "counters") & (t["bound"] == "memory")]
    ratio = decided["dram_bytes_warm"] / decided["bytes"]
    total = float(decided["time_s"].sum())
    edges = [0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.1, np.inf]
    shares = [float(decided.loc[(ratio >= lo) & (ratio < hi), "time_s"].sum()) / total if total > 0 else 0.0
              for lo, hi in zip(edges, edges[1:])]
    binding = ceilings_binding_share(ceilings)
    print(f"FIGURE {name} warm/bytes of decided memory-bound time: " + ", ".join(
        f"[{lo:g},{hi:g}) {share:.0%}" for lo, hi, share in zip(edges, edges[1:], shares))
        + f"; DRAM's term binds from {binding:.3f}")


def figures(name: str, path: str) -> int:
    data = load_profile(path)
    t, c = data.kernels, data.summary.get("counters") or {}
    warm = c.get("warm") or {}
    print(f"FIGURE {name} counters: {c.get('status')}; {c.get('launches_measured')} of {c.get('launches_counted')} "
          f"launches measured, cold run {c.get('wall_s', 0):.1f} s; warm run {warm.get('status')} "
          f"({warm.get('launches_measured')} launches, max {warm.get('passes_max')} pass(es), "
          f"{warm.get('launches_replayed')} replayed, {warm.get('wall_s', 0) or 0:.1f} s) {warm.get('reason', '')}")
    agreed = level_agreement(t)
    share, covered = agreed["level_agree_time_share"], agreed["level_compared_time_share"]
    print(f"FIGURE {name} level agreement: analytic matches counters on "
          f"{'n/a' if share is None else f'{share:.1%}'} of the memory-bound time the counters decided "
          f"({agreed['level_groups']} groups, {'n/a' if covered is None else f'{covered:.1%}'} of memory-bound time)")
    print(f"FIGURE {name} L2-served groups: counters {agreed['cache_groups_counters']}, analytic "
          f"{agreed['cache_groups_analytic']} (of {agreed['level_groups']} decided); cache_time_share "
          f"{data.summary.get('cache_time_share')}")
    count, worst = above(t)
    analytic = place_on_roofline(t.assign(memory_level=t["memory_level_analytic"].replace("", "dram"))
                                 .drop(columns=["roof_time_s"], errors="ignore"), data.ceilings)
    count_a, worst_a = above(analytic)
    print(f"FIGURE {name} rows above their roof by more than 3%: {count} with the counters' levels (max "
          f"{worst:.3f}); {count_a} with the analytic levels (max {worst_a:.3f})")
    distribution(name, t, data.ceilings)
    decided = t[(t["memory_level_source"] == "counters") & (t["bound"] == "memory")]
    wrong = decided[decided["memory_level"] != decided["memory_level_analytic"]].sort_values("time_s", ascending=False)
    cols = ["op", "shapes", "dtype", "calls", "time_s", "bytes", "dram_bytes", "dram_bytes_warm",
            "memory_level_analytic", "memory_level", "efficiency"]
    if len(wrong):
        shown = wrong.head(8)[cols].assign(shapes=lambda f: f["shapes"].str.slice(0, 40))
        print(f"-- {name}: memory-bound groups where the analytic level disagrees, most time first")
        print(shown.to_string(index=False))
    ok = share is not None and share >= TARGET
    print(f"CHECK {name} level agreement: " + ("ok" if ok else f"FAILED: {share} < {TARGET}"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(figures(sys.argv[1], sys.argv[2]))
