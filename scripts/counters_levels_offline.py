"""The analytic memory level against the warm-cache counters, again, from files (issue 29): a
profile made with `--counters ncu` and the capture file of the same run (`--save-capture`).

python scripts/counters_levels_offline.py NAME PROFILE.json CAPTURE.json

The capture is analysed again with this checkout's code and the profile's roofs (the same rows,
in the same order: checked), so a change to the analytic model is measured against the H200's
counters without the GPU. Prints FIGURE lines as scripts/counters_warm_figures.py does: the
share of memory-bound time (of the groups the counters decided) where the analytic level
agrees, the groups each holds to L2, and the rows above the roof each level puts them under.
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
from counters_warm_figures import above  # scripts/: the same count of rows above their roof

from rooflinectl.analysis.counter_levels import (
    ceilings_binding_share,
    dram_peak_bytes_per_s,
    level_agreement,
    warm_beyond_peak,
    with_ceilings_levels,
)
from rooflinectl.analysis.roofline import place_on_roofline
from rooflinectl.capture.run.session import load_capture
from rooflinectl.outputs.profile_file import load_profile
from rooflinectl.pipeline import analyse_trace
from rooflinectl.profile_model import ProfileData

KEYS = ["kernel", "op", "shapes", "calls"]


def reanalysed(profile_path: str, capture_path: str) -> tuple[pd.DataFrame, ProfileData]:
    """The profile's table with `memory_level_analytic` from this checkout's analytic tier and the
    counters' level decided again from the recorded warm figures by this checkout's rule."""
    data = load_profile(profile_path)
    capture = load_capture(capture_path)
    table, _, _ = analyse_trace(capture.trace, capture.device_kind, capture.metadata, data.ceilings)
    old = data.kernels.reset_index(drop=True)
    if len(table) != len(old) or not (table[KEYS].astype(str).to_numpy() == old[KEYS].astype(str).to_numpy()).all():
        raise SystemExit("the capture's rows differ from the profile's: not the same run, or the grouping changed")
    analytic = table["memory_level"].replace("", "dram").to_numpy()
    out = old.assign(memory_level_analytic=analytic, memory_level=analytic, memory_level_source="analytic",
                     dram_bytes_modelled=table["dram_bytes_modelled"].to_numpy())
    return with_ceilings_levels(out, data.ceilings), data  # the counters' level by this checkout's rule


def figures(name: str, profile_path: str, capture_path: str) -> None:
    table, data = reanalysed(profile_path, capture_path)
    agreed = level_agreement(table)
    share = agreed["level_agree_time_share"]
    print(f"FIGURE {name} offline level agreement: {'n/a' if share is None else f'{share:.1%}'} of the memory-bound "
          f"time the counters decided ({agreed['level_groups']} groups); L2-served groups: counters "
          f"{agreed['cache_groups_counters']}, analytic {agreed['cache_groups_analytic']}")
    analytic = place_on_roofline(table.assign(memory_level=table["memory_level_analytic"], memory_level_source="analytic")
                                 .drop(columns=["roof_time_s"], errors="ignore"), data.ceilings)
    count, worst = above(analytic)
    print(f"FIGURE {name} offline rows above their roof by more than 3% with the analytic levels: "
          f"{count} (max {worst:.3f})")
    count, worst = above(place_on_roofline(table.drop(columns=["roof_time_s"], errors="ignore"), data.ceilings))
    print(f"FIGURE {name} offline rows above their roof by more than 3% with the counters' levels where they decide: "
          f"{count} (max {worst:.3f}; warm figures beyond DRAM's peak in their time: "
          f"{int(warm_beyond_peak(table, dram_peak_bytes_per_s(data.ceilings)).sum())})")
    decided = table[(table["memory_level_source"] == "counters") & (table["bound"] == "memory")]
    near_ties(name, decided[~decided["cost_source"].isin(["none", "ncu"])], data.ceilings)
    wrong = decided[decided["memory_level"] != decided["memory_level_analytic"]].sort_values("time_s", ascending=False)
    if len(wrong):
        cols = ["op", "shapes", "calls", "time_s", "bytes", "dram_bytes_warm", "memory_level_analytic", "memory_level"]
        print(wrong.head(10)[cols].assign(shapes=lambda f: f["shapes"].str.slice(0, 44)).to_string(index=False))


def near_ties(name: str, decided: pd.DataFrame, ceilings) -> None:
    """Groups whose two roof terms (bytes at the L2 roof, warm DRAM bytes at DRAM's) are within 10%
    of each other: there the level moves the roof by less than 10%, and the roofs measured on
    another machine (DRAM binding from 0.543 to 0.578 of the bytes on four H200 machines) can flip it."""
    binding = ceilings_binding_share(ceilings)
    share = np.fmin(decided["bytes"], decided["dram_bytes_warm"]) / decided["bytes"] / binding
    tie = (share >= 1 / 1.1) & (share <= 1.1)
    same = decided["memory_level"] == decided["memory_level_analytic"]
    time_s, total = decided["time_s"], float(decided["time_s"].sum())
    outside = float(time_s[~tie].sum())
    print(f"FIGURE {name} offline near-ties (terms within 10%): {float(time_s[tie].sum()) / total:.1%} of the decided "
          f"time, the analytic level agrees on {float(time_s[tie & same].sum()) / max(float(time_s[tie].sum()), 1e-12):.1%} "
          f"of it; outside them on {float(time_s[~tie & same].sum()) / outside:.1%} (DRAM binds from {binding:.3f})")


if __name__ == "__main__":
    figures(*sys.argv[1:4])
