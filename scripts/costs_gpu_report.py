"""FIGURE lines from the issue-34 profiles (scripts/gpu.d/74-costs.sh).

python scripts/costs_gpu_report.py bytes costs.profile.json
    one line per kernel row of a C_<case> module that moved more than 4x L2 (ncu DRAM bytes):
    analytic bytes (what the cost model says runs), min_bytes, DRAM bytes, their ratio; then the
    count within 20%.
python scripts/costs_gpu_report.py unknown NAME PROFILE
    the ops still without a cost on a real model: op name and share of GPU time.
"""

from __future__ import annotations

import math
import sys

from rooflinectl.outputs.profile_file import load_profile

L2_BYTES = 60e6
TOLERANCE = 0.20


def bytes_figures(path: str) -> None:
    table = load_profile(path).kernels
    rows = table[table["module"].astype(str).str.startswith("C_") & (table["dram_bytes"] > 4 * L2_BYTES)]
    within = total = 0
    for _, row in rows.iterrows():
        case = str(row["module"]).split(".")[0][2:]
        analytic, dram = float(row["bytes"]), float(row["dram_bytes"])
        minimum = float(row.get("min_bytes", analytic))
        if math.isnan(analytic) or row["cost_source"] != "analytic":  # "ncu": counters filled an unknown cost
            print(f"FIGURE costs_bytes case={case} op={row['op']} kernel={str(row['kernel'])[:50]!r} "
                  f"analytic=unknown cost_source={row['cost_source']} dram={dram:.4g}")
            continue
        ratio = analytic / dram if dram > 0 else math.nan
        total += 1
        within += abs(ratio - 1) <= TOLERANCE
        print(f"FIGURE costs_bytes case={case} op={row['op']} dtype={row['dtype']} precision={row['precision']} "
              f"analytic={analytic:.4g} min={minimum:.4g} dram={dram:.4g} ratio={ratio:.3f} "
              f"min_ratio={minimum / dram if dram > 0 else math.nan:.3f} "
              f"kernel={str(row['kernel'])[:50]!r}")
    print(f"FIGURE costs_bytes_within_20pct {within} of {total} kernel rows over 4x L2")


def unknown_figures(name: str, path: str) -> None:
    table = load_profile(path).kernels
    total = float(table["time_s"].sum())
    unknown = table[table["cost_source"] == "none"].groupby("op", sort=False)["time_s"].sum()
    unknown = unknown.sort_values(ascending=False)
    print(f"FIGURE costs_unknown_share model={name} share={unknown.sum() / total if total else math.nan:.4%} "
          f"ops={len(unknown)}")
    for op, time_s in unknown.items():
        print(f"FIGURE costs_unknown model={name} op={op} share={time_s / total:.4%}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["bytes"] and len(sys.argv) == 3:
        bytes_figures(sys.argv[2])
    elif sys.argv[1:2] == ["unknown"] and len(sys.argv) == 4:
        unknown_figures(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
