"""Counters in the kernel table: merge the measured columns, and read the table as measured.

Pure functions, DataFrame in, DataFrame out. The analytic flops and bytes stay what they are
(the useful work and the minimum traffic: what efficiency, bound and advice reason with); the
counters sit beside them. A row the cost model could not cost (cost_source none) takes the
measured FLOPs and cold-cache DRAM bytes as its cost, with cost_source "ncu". A row whose bytes
are known and FLOPs not (a user kernel's bytes from its arguments) takes the measured FLOPs, and
the roof of the unit and precision that executed most of them. Where the warm-cache run measured
a group, its DRAM bytes decide the memory level the row is held to (analysis/counter_levels.py).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from rooflinectl.analysis.counter_levels import with_ceilings_levels
from rooflinectl.analysis.roofline import place_on_roofline
from rooflinectl.ceilings.model import Ceilings
from rooflinectl.schema import COUNTER_COLUMNS, KERNEL_COLUMNS

NCU_COST_NOTE = ("measured by Nsight Compute (no cost formula for this op): executed FLOPs and DRAM bytes "
                 "with caches flushed before the kernel")


def split_roof_key(key: str) -> tuple[str, str]:
    """'tensor.bf16' -> ('tensor', 'bf16'); '' -> ('simt', '')."""
    if "." not in str(key):
        return "simt", ""
    unit, precision = str(key).split(".", 1)
    return unit, precision


def apply_counters(table: pd.DataFrame, by_row: pd.DataFrame, ceilings: Ceilings) -> pd.DataFrame:
    """The table with the measured columns of by_row (indexed by row position) filled in, rows of
    unknown cost costed from the counters, the memory level the warm counters say (where they
    measured), and every row placed again on the roofline."""
    out = table.copy().reset_index(drop=True)
    if "memory_level_source" in out.columns and "memory_level_analytic" in out.columns:  # placed with counters before
        redone = out["memory_level_source"] == "counters"
        out.loc[redone, "memory_level"] = out.loc[redone, "memory_level_analytic"]
    for name, empty in COUNTER_COLUMNS.items():
        out[name] = empty
    if len(by_row):
        for name in COUNTER_COLUMNS:
            if name in by_row.columns:
                out.loc[by_row.index, name] = by_row[name].to_numpy()
    for name in ("measured_launches", "measured_own_launches"):
        out[name] = out[name].astype(int)
    unknown = (out["cost_source"] == "none") & (out["measured_launches"] > 0) & out["measured_flops"].notna() \
        & out["dram_bytes"].notna()
    if unknown.any():
        out.loc[unknown, "flops"] = out.loc[unknown, "measured_flops"]
        out.loc[unknown, "bytes"] = out.loc[unknown, "dram_bytes"]
        out.loc[unknown, "cost_source"] = "ncu"
        out.loc[unknown, "cost_note"] = NCU_COST_NOTE
        units = [split_roof_key(k) for k in out.loc[unknown, "measured_precision"]]
        out.loc[unknown, "unit"] = [u for u, _ in units]
        out.loc[unknown, "precision"] = [p or "fp32" for _, p in units]
    _measured_flops_for_bytes_only(out)
    level = ceilings.cache_level()
    if ceilings.memory_roof(level, fall_back=False) is not None:  # without a cache roof every row stays on DRAM
        out = with_ceilings_levels(out, ceilings)
    placed = place_on_roofline(out.drop(columns=["roof_time_s"], errors="ignore"), ceilings)
    return placed[[c for c in KERNEL_COLUMNS if c in placed.columns]]


def _measured_flops_for_bytes_only(out: pd.DataFrame) -> None:
    """Rows with known bytes and unknown FLOPs take the FLOPs the counters measured (in place)."""
    rows = out["flops"].isna() & out["bytes"].notna() & (out["measured_launches"] > 0) & out["measured_flops"].notna()
    if not rows.any():
        return
    out.loc[rows, "flops"] = out.loc[rows, "measured_flops"]
    out.loc[rows, "cost_note"] = out.loc[rows, "cost_note"].astype(str) + "; FLOPs measured by Nsight Compute"
    for i in out.index[rows]:
        unit, precision = split_roof_key(out.at[i, "measured_precision"])
        if precision:  # a kernel that executed no FLOPs keeps its roof
            out.at[i, "unit"], out.at[i, "precision"] = unit, precision


def measured_view(table: pd.DataFrame, ceilings: Ceilings) -> pd.DataFrame:
    """The rows with counters, placed on the roofline with what the hardware executed and moved:
    flops = measured FLOPs, bytes = DRAM bytes, roof = the unit and precision of most measured
    FLOPs (the analytic roof where the kernel executed no FLOPs), the bytes on DRAM's roof. Index:
    the table's rows."""
    measured = table[table.get("measured_launches", pd.Series(0, index=table.index)).fillna(0).astype(int) > 0].copy()
    if measured.empty:
        return measured
    keys = measured["measured_precision"].fillna("").astype(str)
    units = [split_roof_key(k) for k in keys]
    measured["unit"] = np.where(keys != "", [u for u, _ in units], measured["unit"])
    measured["precision"] = np.where(keys != "", [p for _, p in units], measured["precision"])
    measured["flops"] = measured["measured_flops"]
    measured["bytes"] = measured["dram_bytes"]
    measured["cost_source"] = "ncu"
    # DRAM bytes are held to DRAM (or the link a copy crosses), whatever level the analytic tier guessed
    return place_on_roofline(measured.drop(columns=["roof_time_s", "memory_level"], errors="ignore"), ceilings)
