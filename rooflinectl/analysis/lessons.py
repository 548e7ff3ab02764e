"""The reference-kernel lessons compared: which roof holds each variant, and how it fares
against the library on the same shapes. Pure: DataFrame and Ceilings in, DataFrame out.

Input: the placed lesson table (kernel-table columns plus lesson, variant, role), one row per
variant. Added columns:
  roof          "dram" when the bytes take longer than the FLOPs at the roofs, else the compute
                roof's key ("tensor.bf16", "simt.fp32"): the roof the row is held against
  roof_value    that roof, bytes/s or FLOP/s;  roof_source: spec, measured, ...
  vs_library    the lesson's library time / this variant's time (> 1: faster than the library);
                NaN when the lesson has no library row
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from rooflinectl.ceilings.model import Ceilings


def _roof(row: pd.Series, ceilings: Ceilings) -> tuple[str, float, str]:
    dram = ceilings.dram()
    key = ceilings.compute_roof_key(str(row["unit"]), str(row["precision"]))
    if key is None:
        return "dram", dram.value, dram.source
    peak = ceilings.compute_flops_per_s[key]
    flops, nbytes = float(row["flops"]), float(row["bytes"])
    if nbytes / dram.value >= flops / peak.value:
        return "dram", dram.value, dram.source
    return key, peak.value, peak.source


def compare_lessons(table: pd.DataFrame, ceilings: Ceilings) -> pd.DataFrame:
    """Add roof, roof_value, roof_source and vs_library to the lesson table (see the docstring)."""
    out = table.copy()
    roofs = [_roof(row, ceilings) for _, row in out.iterrows()]
    out["roof"] = [r[0] for r in roofs]
    out["roof_value"] = np.array([r[1] for r in roofs], dtype=float)
    out["roof_source"] = [r[2] for r in roofs]
    library_time = out[out["role"] == "library"].groupby("lesson")["time_s"].first()
    out["vs_library"] = [library_time.get(lesson, math.nan) / t if t > 0 else math.nan
                         for lesson, t in zip(out["lesson"], out["time_s"])]
    return out


def target_status(metric: str, threshold: float, row: pd.Series) -> tuple[float, bool]:
    """(the figure the target is about, met or not) for the lesson's own kernel's row.
    metric "roof": efficiency against its roof; "library": library time / its time."""
    value = float(row["efficiency"] if metric == "roof" else row["vs_library"])
    return value, bool(value == value and value >= threshold)
