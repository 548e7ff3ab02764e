"""FIGURE lines for scripts/gpu.d/72-roofs.sh (issue 29: roofs that are ceilings).

python scripts/roofs_figures.py ceilings CEILINGS.json
    per precision: the peak the roof uses, the measured achievable figure, the clock of each; L2/DRAM.
python scripts/roofs_figures.py profile NAME PROFILE.json
    rows more than 3% above the roof they are held to, the largest ratio, rows held to L2 and their
    time share; and, on the same table, what the roofs of before issue 29 gave (compute roofs = the
    measured peaks, every row on DRAM): the rows above 1.05 then.
python scripts/roofs_figures.py counters NAME PROFILE.json
    a profile made with --counters ncu: how often the analytic memory level matches the counters'.
"""

from __future__ import annotations

import json
import sys

import pandas as pd

from rooflinectl.analysis.roofline import place_on_roofline
from rooflinectl.ceilings.model import Ceilings
from rooflinectl.outputs.profile_file import load_profile

TOLERANCE = 1.03


def ceilings_figures(path: str) -> None:
    with open(path, encoding="utf-8") as fh:
        c = Ceilings.from_dict(json.load(fh)["ceilings"])
    for key in sorted(set(c.compute_flops_per_s) | set(c.achievable_flops_per_s)):
        peak, reached = c.compute_flops_per_s.get(key), c.achievable_flops_per_s.get(key)
        print(f"FIGURE ceilings {key}: peak {peak.value / 1e12 if peak else float('nan'):.1f} T/s "
              f"({peak.source if peak else '-'}, at {peak.clock_mhz if peak else None} MHz); achievable "
              f"{reached.value / 1e12 if reached else float('nan'):.1f} T/s at {reached.clock_mhz if reached else None} MHz"
              + (f" [{reached.note}]" if reached else ""))
    for level, roof in sorted(c.memory_bytes_per_s.items()):
        print(f"FIGURE ceilings memory.{level}: {roof.value / 1e12:.3f} TB/s ({roof.source}; {roof.note})")
    print(f"FIGURE ceilings cache capacity: {c.cache_bytes()} bytes")


def before_issue_29(table: pd.DataFrame, c: Ceilings) -> pd.DataFrame:
    """The same rows against the old roofs: measured compute peaks as roofs, every row on DRAM
    (or its link)."""
    old = Ceilings.from_dict(c.to_dict())
    old.compute_flops_per_s.update(old.achievable_flops_per_s)
    rows = table.drop(columns=["memory_level", "roof_time_s"], errors="ignore")
    return place_on_roofline(rows, old)


def profile_figures(name: str, path: str) -> None:
    data = load_profile(path)
    t = data.kernels
    known = t[t["cost_source"] != "none"]
    total_s = float(t["time_s"].sum())
    above = known[known["efficiency"] > TOLERANCE]
    cached = t[t["memory_level"].isin(("l2", "cache"))]
    memory = known[known["bound"] == "memory"]
    print(f"FIGURE {name}: {len(t)} rows, {int(t['calls'].sum())} launches; rows above their roof by more than 3%: "
          f"{len(above)} ({float(above['time_s'].sum()) / total_s:.1%} of kernel time); max ratio "
          f"{float(known['efficiency'].max()):.3f}")
    print(f"FIGURE {name}: rows held to L2 {len(cached)} of {len(t)}, {float(cached['time_s'].sum()) / total_s:.1%} of "
          f"kernel time; of memory-bound time {float(memory.loc[memory['memory_level'] == 'l2', 'time_s'].sum()) / max(float(memory['time_s'].sum()), 1e-30):.1%}")
    print(f"FIGURE {name}: rows above the measured achievable peak by more than 3% (efficiency_achievable): "
          f"{int((known['efficiency_achievable'] > TOLERANCE).sum())}")
    old = before_issue_29(known, data.ceilings)
    print(f"FIGURE {name}: with the roofs before issue 29 (measured peaks, all on DRAM): {int((old['efficiency'] > 1.05).sum())} "
          f"rows above 1.05, max ratio {float(old['efficiency'].max()):.3f}")
    cols = ["kernel", "op", "shapes", "dtype", "calls", "time_s", "efficiency", "efficiency_achievable", "bound",
            "memory_level", "suspect"]
    shown = known.sort_values("efficiency", ascending=False).head(8)[cols]
    shown = shown.assign(kernel=shown["kernel"].str.slice(0, 50), shapes=shown["shapes"].str.slice(0, 40))
    print(f"-- {name}: the 8 rows nearest their roof")
    print(shown.to_string(index=False))
    print(f"CHECK {name}: " + ("ok" if above.empty else f"FAILED: {len(above)} rows above their roof by more than 3%"))


def counters_figures(name: str, path: str) -> None:
    """The analytic memory level against the one the counters suggest (DRAM bytes under half the
    minimum traffic: served by L2), over the memory-bound time of the rows ncu measured. ncu flushes
    the caches before each replay, so its DRAM bytes are cold-cache: expect it to call everything DRAM."""
    t = load_profile(path).kernels
    rows = t[(t["measured_launches"] > 0) & (t["bound"] == "memory") & t["dram_bytes"].notna() & (t["bytes"] > 0)]
    counted = rows.assign(counters_level=["l2" if d < 0.5 * b else "dram" for d, b in zip(rows["dram_bytes"], rows["bytes"])])
    total = float(counted["time_s"].sum())
    agree = float(counted.loc[counted["counters_level"] == counted["memory_level"], "time_s"].sum())
    print(f"FIGURE {name} counters: {len(counted)} memory-bound rows measured; analytic level agrees with the "
          f"cold-cache counters on {agree / total if total > 0 else float('nan'):.1%} of their time; analytic l2 on "
          f"{float(counted.loc[counted['memory_level'] == 'l2', 'time_s'].sum()) / max(total, 1e-30):.1%}, counters l2 on "
          f"{float(counted.loc[counted['counters_level'] == 'l2', 'time_s'].sum()) / max(total, 1e-30):.1%}")


if __name__ == "__main__":
    if sys.argv[1] == "ceilings":
        ceilings_figures(sys.argv[2])
    elif sys.argv[1] == "counters":
        counters_figures(sys.argv[2], sys.argv[3])
    else:
        profile_figures(sys.argv[2], sys.argv[3])
