"""Re-aggregate a kernel table by op, by module or by the user's source line, then place the new
rows on the roofline."""

from __future__ import annotations

import pandas as pd

from rooflinectl.aggregate import aggregate, common_module, single_or_count
from rooflinectl.analysis.roofline import LAUNCH_CONFIG_COLUMNS, place_on_roofline
from rooflinectl.ceilings.model import Ceilings
from rooflinectl.schema import KERNEL_COLUMNS

BACKWARD_MARK = " (backward)"  # attribution/sources.py's suffix to the function of backward work

BY_KEYS = {"kernel": ["kernel", "op", "shapes", "dtype"], "op": ["op", "unit", "precision"],
           "module": ["module", "unit", "precision"], "line": ["source", "unit", "precision"]}


def regroup(table: pd.DataFrame, by: str, ceilings: Ceilings) -> pd.DataFrame:
    """Sum calls, time, FLOPs and bytes per kernel (the same kernel, op, shapes and dtype in every
    module: one row, its module the modules' common path), per op, per module, or per source line
    (rooflinectl.aggregate: a group with any row of unknown cost is unknown)."""
    if table.empty or (by == "kernel" and not table.duplicated(BY_KEYS["kernel"]).any()):
        return table
    sources = {}
    if "source" in table.columns:  # a profile written before source lines were kept has none
        sources = {"source": ("source", single_or_count("lines")),
                   "source_function": ("source_function", _function_of),
                   "source_call": ("source_call", _one_or_empty)}
    out = aggregate(
        table, BY_KEYS[by],
        kernel=("kernel", single_or_count("kernels")),
        op=("op", single_or_count("ops")),
        module=("module", common_module if by == "kernel" else lambda s: s.iloc[0] if s.nunique() == 1 else ""),
        op_family=("op_family", "first"),
        shapes=("shapes", single_or_count("shapes")),
        dtype=("dtype", "first"),
        unit=("unit", "first"),
        precision=("precision", "first"),
        device=("device", "first"),
        origin=("origin", "first"),
        cost_note=("cost_note", "first"),
        blocks=("blocks", "median"),
        threads_per_block=("threads_per_block", "median"),
        rank=("rank", "first"),
        **{k: v for k, v in sources.items() if k not in BY_KEYS[by]},
        **({"memory_level": ("memory_level", "first")} if "memory_level" in table.columns else {}),  # the longest member's
        **{name: (name, "first") for name in ("memory_level_source", "memory_level_analytic") if name in table.columns},
        **{name: (name, "median") for name in LAUNCH_CONFIG_COLUMNS if name in table.columns},
    )
    out = out.drop(columns=["roof_time_s"], errors="ignore")  # placed again below, against the summed cost
    placed = place_on_roofline(out, ceilings)
    placed = placed[[c for c in KERNEL_COLUMNS if c in placed.columns]]
    return placed.sort_values("time_s", ascending=False, kind="stable").reset_index(drop=True)


def _one_or_empty(values: pd.Series) -> str:
    """The rows' one value, '' when they differ."""
    return values.iloc[0] if values.nunique() == 1 else ""


def _function_of(values: pd.Series) -> str:
    """The rows' function; 'step (+ backward)' when they hold a line's forward and backward work."""
    names = set(values)
    bases = {n.removesuffix(BACKWARD_MARK) for n in names}
    if len(names) == 1:
        return values.iloc[0]
    return f"{bases.pop()} (+ backward)" if len(bases) == 1 else ""


def unknown_costs(table: pd.DataFrame) -> pd.DataFrame:
    """The kernel-table rows without a cost, by (op, kernel, why), most time first: what
    `show --unknown` lists. `why` is the cost_note attribution wrote (no cost formula, formula
    raised, inputs not modelled, no op linked, ...); time_share is of all kernel time."""
    columns = ["op", "kernel", "why", "calls", "time_s", "time_share"]
    unknown = table[table["cost_source"] == "none"] if len(table) else table
    if unknown.empty:
        return pd.DataFrame(columns=columns)
    grouped = (unknown.rename(columns={"cost_note": "why"})
               .groupby(["op", "kernel", "why"], sort=False, dropna=False)
               .agg(calls=("calls", "sum"), time_s=("time_s", "sum"), time_share=("time_share", "sum"))
               .reset_index())
    return grouped.sort_values("time_s", ascending=False, kind="stable").reset_index(drop=True)[columns]
