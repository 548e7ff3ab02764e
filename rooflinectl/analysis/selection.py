"""Which groups a view shows and in what order: `--filter` and `--sort`, the same in `show` and
`plot` (one code for both, so the same options give the same rows)."""

from __future__ import annotations

import re

import pandas as pd

from rooflinectl.errors import UsageError

FILTER_COLUMNS = ("kernel", "op", "module", "op_family")
# --sort KEY -> (column, largest first); efficiency lowest first: the groups furthest from their roof
SORT_KEYS: dict[str, tuple[str, bool]] = {
    "time": ("time_s", True), "calls": ("calls", True), "flops": ("flops", True), "bytes": ("bytes", True),
    "intensity": ("intensity", True), "efficiency": ("efficiency", False), "headroom": ("headroom_s", True),
}


def filter_groups(table: pd.DataFrame, filter_regex: str | None) -> pd.DataFrame:
    """Rows whose kernel, op, module or op family matches the regex (search, not full match)."""
    if not filter_regex:
        return table
    try:
        pattern = re.compile(filter_regex)
    except re.error as exc:
        raise UsageError(f"--filter {filter_regex!r} is not a valid regular expression ({exc}).") from None
    columns = [c for c in FILTER_COLUMNS if c in table.columns]
    text = table[columns].astype(str).agg(" ".join, axis=1) if len(table) else pd.Series(dtype=str)
    return table[text.map(lambda s: bool(pattern.search(s)))] if len(table) else table


def sort_groups(table: pd.DataFrame, key: str = "time") -> pd.DataFrame:
    """The rows in --sort order (missing values last; ties by time, largest first), index reset."""
    if key not in SORT_KEYS:
        raise UsageError(f"--sort {key!r}: sort by one of {', '.join(SORT_KEYS)}.")
    column, descending = SORT_KEYS[key]
    by = [column] if column == "time_s" else [column, "time_s"]
    return table.sort_values(by, ascending=[not descending] + [False] * (len(by) - 1), na_position="last",
                             ignore_index=True, kind="stable")
