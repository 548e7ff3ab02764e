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

import pandas as pd
from counters_warm_figures import above  # scripts/: the same count of rows above their roof

from rooflinectl.analysis.counter_levels import level_agreement
from rooflinectl.analysis.roofline import place_on_roofline
from rooflinectl.capture.run.session import load_capture
from rooflinectl.outputs.profile_file import load_profile
from rooflinectl.pipeline import analyse_trace
from rooflinectl.profile_model import ProfileData

KEYS = ["kernel", "op", "shapes", "calls"]


def reanalysed(profile_path: str, capture_path: str) -> tuple[pd.DataFrame, ProfileData]:
    """The profile's table with `memory_level_analytic` from this checkout's analytic tier."""
    data = load_profile(profile_path)
    capture = load_capture(capture_path)
    table, _, _ = analyse_trace(capture.trace, capture.device_kind, capture.metadata, data.ceilings)
    old = data.kernels.reset_index(drop=True)
    if len(table) != len(old) or not (table[KEYS].astype(str).to_numpy() == old[KEYS].astype(str).to_numpy()).all():
        raise SystemExit("the capture's rows differ from the profile's: not the same run, or the grouping changed")
    return old.assign(memory_level_analytic=table["memory_level"].replace("", "dram").to_numpy(),
                      dram_bytes_modelled=table["dram_bytes_modelled"].to_numpy()), data


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
    decided = table[(table["memory_level_source"] == "counters") & (table["bound"] == "memory")]
    wrong = decided[decided["memory_level"] != decided["memory_level_analytic"]].sort_values("time_s", ascending=False)
    if len(wrong):
        cols = ["op", "shapes", "calls", "time_s", "bytes", "dram_bytes_warm", "memory_level_analytic", "memory_level"]
        print(wrong.head(10)[cols].assign(shapes=lambda f: f["shapes"].str.slice(0, 44)).to_string(index=False))


if __name__ == "__main__":
    figures(*sys.argv[1:4])
