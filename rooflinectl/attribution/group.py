"""Group launches into kernel-table rows: one per (kernel, op, input shapes, dtype)."""

from __future__ import annotations

import os

import pandas as pd

GROUP_KEY = ["kernel", "op", "shapes", "dtype"]
MAX_SEQUENCE = 100_000


def common_module(paths: pd.Series) -> str:
    """The deepest module path shared by all launches of a group ('' when they share none)."""
    unique = sorted({p for p in paths if p})
    if not unique:
        return ""
    if len(unique) == 1:
        return unique[0]
    prefix = os.path.commonprefix([p.split(".") for p in unique])
    return ".".join(prefix)


def group_launches(launches: pd.DataFrame) -> tuple[pd.DataFrame, list[int]]:
    """Aggregate launches; returns the table (ordered by first launch) and the launch sequence
    as row positions in that table (first MAX_SEQUENCE launches)."""
    if launches.empty:
        return launches.drop(columns=["start_ns", "end_ns", "launch_ns"]).assign(calls=[]), []
    keyed = launches.reset_index(drop=True)
    grouped = keyed.groupby(GROUP_KEY, sort=False, dropna=False)
    table = grouped.agg(
        op_family=("op_family", "first"),
        module=("module", common_module),
        device=("device", "first"),
        origin=("origin", "first"),
        calls=("time_s", "size"),
        time_s=("time_s", "sum"),
        flops=("flops", lambda s: s.sum(min_count=1)),
        bytes=("bytes", lambda s: s.sum(min_count=1)),
        cost_source=("cost_source", "first"),
        cost_note=("cost_note", "first"),
        blocks=("blocks", "median"),
        threads_per_block=("threads_per_block", "median"),
        unit=("unit", "first"),
        precision=("precision", "first"),
    ).reset_index()
    position = {key: i for i, key in enumerate(grouped.groups.keys())}
    keys = list(zip(*(keyed[c] for c in GROUP_KEY)))
    sequence = [position[k] for k in keys[:MAX_SEQUENCE]]
    return table, sequence
