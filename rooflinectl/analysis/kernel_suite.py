"""The reference kernels compared: which roof holds each variant, and how it fares
against the library on the same shapes. Pure: DataFrame and Ceilings in, DataFrame out.

Input: the placed variants table (kernel-table columns placed by analysis.roofline, plus name,
variant, role, own_flops, own_bytes), one row per variant. Added columns:
  roof          the roof placement held the row to: "dram" (or the memory level) when its bound
                is memory, the compute roof's key ("tensor.bf16", "simt.fp32") when compute; for
                a latency-bound row the one whose time placement kept (roof_time_s); "-" when
                the cost is unknown
  roof_value    that roof, bytes/s or FLOP/s (a compute roof at the SM clock placement used);
  roof_source   spec, measured, ...
  vs_library    the reference kernel's library time / this variant's time (> 1: faster than the library);
                NaN when the reference kernel has no library row
  own_efficiency  for a variant held to the op's minimum while its kernels declare more (own_*):
                its efficiency against what its kernels declare (what a profile shows); else NaN
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from rooflinectl.analysis.roofline import clock_scale, place_on_roofline
from rooflinectl.attribution.transfers import memory_level
from rooflinectl.ceilings.model import Ceilings

OWN_COST = ("own_flops", "own_bytes")


def _roof(row: pd.Series, ceilings: Ceilings) -> tuple[str, float, str]:
    if row["bound"] == "unknown":
        return "-", math.nan, ""
    level = memory_level(str(row["kernel"]))
    memory = ceilings.memory_roof(level, fall_back=True) or ceilings.dram()
    key = ceilings.compute_roof_key(str(row["unit"]), str(row["precision"]))
    on_memory = row["bound"] == "memory" or (row["bound"] != "compute" and float(row["bytes"]) / memory.value
                                               >= float(row["roof_time_s"]))
    if key is None or on_memory:
        return level, memory.value, memory.source
    peak = ceilings.compute_flops_per_s[key]
    return key, peak.value * clock_scale(peak, float(row["sm_clock_mhz"])), peak.source


def _own_efficiency(table: pd.DataFrame, ceilings: Ceilings) -> np.ndarray:
    """Each row's efficiency against its kernels' own declared cost, where it has one."""
    if not all(c in table.columns for c in OWN_COST):
        return np.full(len(table), math.nan)
    own = table["own_bytes"].notna().to_numpy(dtype=bool)
    out = np.full(len(table), math.nan)
    if own.any():
        replaced = table[own].assign(flops=table.loc[own, "own_flops"], bytes=table.loc[own, "own_bytes"])
        out[own] = place_on_roofline(replaced, ceilings)["efficiency"].to_numpy(dtype=float)
    return out


def compare_variants(table: pd.DataFrame, ceilings: Ceilings) -> pd.DataFrame:
    """Add roof, roof_value, roof_source, vs_library and own_efficiency to the placed reference kernel
    table (see the module docstring)."""
    out = table.copy()
    roofs = [_roof(row, ceilings) for _, row in out.iterrows()]
    out["roof"] = [r[0] for r in roofs]
    out["roof_value"] = np.array([r[1] for r in roofs], dtype=float)
    out["roof_source"] = [r[2] for r in roofs]
    library_time = out[out["role"] == "library"].groupby("name")["time_s"].first()
    out["vs_library"] = [library_time.get(spec, math.nan) / t if t > 0 else math.nan
                         for spec, t in zip(out["name"], out["time_s"])]
    out["own_efficiency"] = _own_efficiency(out, ceilings)
    return out


def target_status(metric: str, threshold: float, row: pd.Series) -> tuple[float, bool]:
    """(the figure the target is about, met or not) for the reference kernel's own row.
    metric "roof": efficiency against its roof; "library": library time / its time."""
    value = float(row["efficiency"] if metric == "roof" else row["vs_library"])
    return value, bool(value == value and value >= threshold)


def target_statuses(report: pd.DataFrame, entries: list[dict[str, Any]]) -> dict[str, tuple[float, bool]]:
    """Per reference kernel with a target: (the figure the target is about, met or not), from the row
    of its own Triton variant in compare_variants' table; kernels without a target or a row are absent."""
    out: dict[str, tuple[float, bool]] = {}
    for entry in entries:
        target = entry.get("target")
        own = report[(report["name"] == entry["name"]) & (report["role"] == "kernel")]
        if target and len(own):
            out[entry["name"]] = target_status(target["metric"], target["threshold"], own.iloc[0])
    return out
