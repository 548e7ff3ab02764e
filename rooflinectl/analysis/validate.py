"""Analytic against measured, per kernel group and per op family: where the cost model is wrong.

Pure functions, DataFrame in, DataFrame out. Ratios are analytic / measured, so 1.0 is exact, under
1 the model counts less than the hardware did, over 1 more:
- flops_ratio: useful FLOPs (the model) / executed FLOPs (ncu). Under 1 on a GEMM means padded
  tiles or recomputation; transcendental element-wise ops sit far under 1 by convention (ncu
  counts their FMA polynomials, the model one FLOP per function).
- bytes_ratio: minimum traffic (the model) / DRAM bytes (ncu, cold caches). Under 1: re-reads or
  spills; over 1: data that stayed in L2 (a write still in L2 when the kernel ends is not counted
  by ncu for it).
- bound vs measured_bound: the same roofline placement (analysis/roofline.py) on the analytic and
  on the measured numbers (executed FLOPs on the roof of the precision that ran most of them,
  DRAM bytes); agreement is counted on GPU time where both say memory or compute.
- memory_level_analytic vs memory_level: where the warm-cache run measured a group, the level its
  DRAM bytes say (analysis/counter_levels.py) against the analytic guess; agreement is counted on
  memory-bound GPU time (level_agree_time_share).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from rooflinectl.analysis.counter_levels import level_agreement
from rooflinectl.analysis.counters import measured_view
from rooflinectl.ceilings.model import Ceilings

ROW_COLUMNS = ["kernel", "op", "op_family", "shapes", "calls", "measured_launches", "time_s", "time_share",
               "flops", "measured_flops", "flops_ratio", "bytes", "dram_bytes", "bytes_ratio", "l2_bytes",
               "l1_bytes", "analytic_roof", "measured_precision", "bound", "measured_bound", "agree", "dram_bytes_warm",
               "dram_bytes_modelled", "memory_level_analytic", "memory_level", "memory_level_source", "level_agree"]
CLASSES = ("memory", "compute")


def _ratio(a: pd.Series, b: pd.Series) -> pd.Series:
    a, b = a.astype(float), b.astype(float)
    return pd.Series(np.where(b > 0, a / b.where(b > 0), np.nan), index=a.index)


def validate_rows(table: pd.DataFrame, ceilings: Ceilings) -> pd.DataFrame:
    """One row per kernel group that has counters and an analytic cost, largest time first."""
    measured = measured_view(table, ceilings)
    if measured.empty:
        return pd.DataFrame(columns=ROW_COLUMNS)
    analytic = table.loc[measured.index]
    keep = ~analytic["cost_source"].isin(["none", "ncu"])
    analytic, measured = analytic[keep], measured[keep]
    out = analytic[["kernel", "op", "op_family", "shapes", "calls", "measured_launches", "time_s", "time_share",
                    "flops", "measured_flops", "bytes", "dram_bytes", "l2_bytes", "l1_bytes",
                    "measured_precision", "bound"]].copy()
    out["flops_ratio"] = _ratio(out["flops"], out["measured_flops"])
    out["bytes_ratio"] = _ratio(out["bytes"], out["dram_bytes"])
    out["analytic_roof"] = analytic["unit"].astype(str) + "." + analytic["precision"].astype(str)
    out["measured_bound"] = measured["bound"]
    both = out["bound"].isin(CLASSES) & out["measured_bound"].isin(CLASSES)
    out["agree"] = np.where(both, out["bound"] == out["measured_bound"], None)
    for name, empty in (("dram_bytes_warm", np.nan), ("dram_bytes_modelled", np.nan), ("memory_level_analytic", ""),
                        ("memory_level", "dram"),
                        ("memory_level_source", "analytic")):
        out[name] = analytic[name] if name in analytic.columns else empty
    decided = out["memory_level_source"] == "counters"
    out["level_agree"] = np.where(decided, out["memory_level"] == out["memory_level_analytic"], None)
    return out[ROW_COLUMNS].sort_values("time_s", ascending=False, kind="stable")


def validate_families(rows: pd.DataFrame) -> pd.DataFrame:
    """Per op family: summed analytic and measured FLOPs and bytes, their ratios, GPU time, and the
    share of that time where the bound agrees."""
    if rows.empty:
        return pd.DataFrame(columns=["op_family", "groups", "time_s", "flops", "measured_flops", "flops_ratio",
                                     "bytes", "dram_bytes", "bytes_ratio", "agree_time_share"])
    rows = rows.assign(_agree_s=np.where(rows["agree"] == True, rows["time_s"], 0.0),  # noqa: E712 - object column
                       _classed_s=np.where(rows["agree"].notna(), rows["time_s"], 0.0))
    fam = rows.groupby("op_family", sort=False).agg(
        groups=("kernel", "size"), time_s=("time_s", "sum"), flops=("flops", "sum"),
        measured_flops=("measured_flops", "sum"), bytes=("bytes", "sum"), dram_bytes=("dram_bytes", "sum"),
        _agree_s=("_agree_s", "sum"), _classed_s=("_classed_s", "sum")).reset_index()
    fam["flops_ratio"] = _ratio(fam["flops"], fam["measured_flops"])
    fam["bytes_ratio"] = _ratio(fam["bytes"], fam["dram_bytes"])
    fam["agree_time_share"] = _ratio(fam["_agree_s"], fam["_classed_s"])
    fam = fam.drop(columns=["_agree_s", "_classed_s"])
    return fam.sort_values("time_s", ascending=False, kind="stable").reset_index(drop=True)


def agreement(rows: pd.DataFrame, total_time_s: float, table: pd.DataFrame | None = None) -> dict[str, float | int | None]:
    """Bound agreement on GPU time: the share of the time classified memory or compute by both
    where they agree, and how much time that classification covers; with the kernel table, the
    memory level's agreement too (analysis/counter_levels.level_agreement)."""
    classed = rows[rows["agree"].notna()]
    classed_s = float(classed["time_s"].sum())
    agree_s = float(classed.loc[classed["agree"] == True, "time_s"].sum())  # noqa: E712 - object column
    return {
        "agree_time_share": agree_s / classed_s if classed_s > 0 else None,
        "classified_time_share": classed_s / total_time_s if total_time_s > 0 else None,
        "compared_time_share": float(rows["time_s"].sum()) / total_time_s if total_time_s > 0 else None,
        **(level_agreement(table) if table is not None else {}),
    }
