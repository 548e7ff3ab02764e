"""Re-aggregate a kernel table by op or by module, then place the new rows on the roofline."""

from __future__ import annotations

import pandas as pd

from rooflinectl.analysis.roofline import place_on_roofline
from rooflinectl.ceilings.model import Ceilings
from rooflinectl.schema import KERNEL_COLUMNS

BY_KEYS = {"op": ["op", "unit", "precision"], "module": ["module", "unit", "precision"]}


def regroup(table: pd.DataFrame, by: str, ceilings: Ceilings) -> pd.DataFrame:
    """by="kernel" returns the table as is; "op" or "module" sums calls, time, FLOPs and bytes."""
    if by == "kernel" or table.empty:
        return table
    keys = BY_KEYS[by]
    grouped = table.groupby(keys, sort=False, dropna=False)
    out = grouped.agg(
        kernel=("kernel", lambda s: s.iloc[0] if s.nunique() == 1 else f"{s.nunique()} kernels"),
        op=("op", lambda s: s.iloc[0] if s.nunique() == 1 else f"{s.nunique()} ops"),
        module=("module", lambda s: s.iloc[0] if s.nunique() == 1 else ""),
        op_family=("op_family", "first"),
        shapes=("shapes", lambda s: s.iloc[0] if s.nunique() == 1 else f"{s.nunique()} shapes"),
        dtype=("dtype", "first"),
        device=("device", "first"),
        origin=("origin", "first"),
        calls=("calls", "sum"),
        time_s=("time_s", "sum"),
        flops=("flops", lambda s: s.sum(min_count=1)),
        bytes=("bytes", lambda s: s.sum(min_count=1)),
        cost_source=("cost_source", lambda s: s.iloc[0] if s.nunique() == 1 else "mixed"),
        cost_note=("cost_note", "first"),
        blocks=("blocks", "median"),
        threads_per_block=("threads_per_block", "median"),
        rank=("rank", "first"),
    )
    out = out.drop(columns=[k for k in keys if k in out.columns], errors="ignore").reset_index()
    placed = place_on_roofline(out, ceilings)
    placed = placed[[c for c in KERNEL_COLUMNS if c in placed.columns]]
    return placed.sort_values("time_s", ascending=False, kind="stable").reset_index(drop=True)
