"""One aggregation of kernel-table rows, with one rule for unknown costs.

Every stage that sums rows uses it: attribution (launches -> kernel groups), analysis (`show
--by op|module`, and the matching of two profiles for `diff` and `plot A B`). The rule:
- a sum of FLOPs, bytes or roof time over rows of which any has an unknown cost (NaN) is unknown
  (NaN): a missing cost never counts as zero, and a group is never placed on the roofline with
  the time of all its rows but the FLOPs of some;
- the group's cost_source is the one its rows share; "none" when any row's cost is unknown;
  "mixed" when the rows' costs are known from several sources;
- the group's SM clock (sm_clock_mhz, where present) is the time-weighted mean of its rows'
  known clocks, NaN when none is known.
And one way to ask a question of every launch's name: once per distinct name (flag_each_distinct).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

MIXED_SOURCE = "mixed"


def flag_each_distinct(values: pd.Series, question: Callable[[str], bool]) -> np.ndarray:
    """question(str(value)) for every value, asked once per distinct value: a run may hold a
    million launches of a few kernels (no text copy of the column is made either)."""
    codes, distinct = pd.factorize(values.to_numpy(), use_na_sentinel=False)
    answers = np.array([bool(question(str(value))) for value in distinct], dtype=bool)
    return answers[codes] if len(codes) else np.zeros(0, dtype=bool)


def sum_known(values: pd.Series) -> float:
    """The sum, or NaN when any value is NaN (unknown stays unknown; an empty series sums to 0)."""
    return values.sum(min_count=len(values))


def combined_cost_source(sources: pd.Series) -> str:
    """The rows' common cost_source; "none" if any row's cost is unknown; else "mixed"."""
    unique = set(sources.unique())  # hashed in C: a group may hold a million launches
    if "none" in unique:
        return "none"
    return unique.pop() if len(unique) == 1 else MIXED_SOURCE


def single_or_count(noun: str) -> Callable[[pd.Series], str]:
    """An aggregator naming a group: its one value, or "N <noun>" when the rows differ."""

    def name(values: pd.Series) -> str:
        count = values.nunique()
        return values.iloc[0] if count == 1 else f"{count} {noun}"

    return name


def common_module(paths: pd.Series) -> str:
    """The deepest module path shared by all rows of a group ('' when they share none)."""
    unique = sorted({p for p in paths if p})
    if not unique:
        return ""
    if len(unique) == 1:
        return unique[0]
    prefix = os.path.commonprefix([p.split(".") for p in unique])
    return ".".join(prefix)


def aggregate(table: pd.DataFrame, keys: list[str], **named: tuple[str, Any]) -> pd.DataFrame:
    """The table's rows grouped by keys (NaN keys kept, first-seen order), one output row per group.

    Sums time_s (and calls, roof_time_s, measured_launches, measured_own_launches where present:
    rows that share one measured launch of their sampling class each count it), sums flops, bytes and
    the measured counter columns by the rule above (a group with an unmeasured row has unknown
    measured totals), combines cost_source; `named` adds or overrides pandas named aggregations. Key columns come
    back as columns (reset index).
    """
    spec: dict[str, tuple[str, Any]] = {"time_s": ("time_s", "sum")}
    for column in ("calls", "measured_launches", "measured_own_launches"):
        if column in table.columns:
            spec[column] = (column, "sum")
    for column in ("flops", "bytes", "min_bytes", "roof_time_s", "measured_flops", "dram_bytes", "l2_bytes", "l1_bytes",
                   "dram_bytes_modelled"):
        if column in table.columns:
            spec[column] = (column, sum_known)
    if "cost_source" in table.columns:
        spec["cost_source"] = ("cost_source", combined_cost_source)
    if "measured_precision" in table.columns:
        spec["measured_precision"] = ("measured_precision", single_or_count("precisions"))
    clocked = "sm_clock_mhz" in table.columns and "sm_clock_mhz" not in keys and "sm_clock_mhz" not in named
    if clocked:
        known = table["sm_clock_mhz"].notna()
        table = table.assign(_clock_x_time=(table["sm_clock_mhz"] * table["time_s"]).where(known, 0.0),
                             _clocked_time=table["time_s"].where(known, 0.0))
        spec.update(_clock_x_time=("_clock_x_time", "sum"), _clocked_time=("_clocked_time", "sum"))
    spec.update(named)
    spec = {k: v for k, v in spec.items() if k not in keys}
    out = table.groupby(keys, sort=False, dropna=False).agg(**spec).reset_index()
    if clocked:
        weight = out.pop("_clocked_time")
        out["sm_clock_mhz"] = (out.pop("_clock_x_time") / weight).where(weight > 0)
    return out
