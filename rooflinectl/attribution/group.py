"""Group launches into kernel-table rows: one per (kernel, op, input shapes, dtype, module, source line).

The module is part of the key: twelve identical layers are twelve rows, so `show --by module`
can say what each layer costs (`show` by kernel sums them again for its compact view).
"""

from __future__ import annotations

import pandas as pd

from rooflinectl.aggregate import aggregate
from rooflinectl.attribution.records import PER_LAUNCH_COLUMNS
from rooflinectl.schema import LATER_COLUMNS

# module too: repeated layers stay apart; op_args: two convolutions of one input shape and another stride
GROUP_KEY = ["kernel", "op", "shapes", "dtype", "module", "source", "op_args"]
MAX_SEQUENCE = 100_000


def group_launches(launches: pd.DataFrame) -> tuple[pd.DataFrame, list[int]]:
    """Aggregate launches (rooflinectl.aggregate: one NaN rule); returns the table (ordered by
    first launch) and the launch sequence as row positions in that table (first MAX_SEQUENCE)."""
    table, rows = group_table(launches)
    return table, rows.head(MAX_SEQUENCE).tolist()


def group_table(launches: pd.DataFrame) -> tuple[pd.DataFrame, pd.Series]:
    """The table (ordered by first launch) and every launch's row in it (group_index)."""
    if launches.empty:
        return (launches.drop(columns=list(PER_LAUNCH_COLUMNS), errors="ignore").assign(calls=[]),
                pd.Series([], dtype=int))
    keyed = launches.reset_index(drop=True)
    missing = {name: empty for name, empty in LATER_COLUMNS.items() if name not in keyed.columns}
    if missing:  # launches of a table built before source lines were kept
        keyed = keyed.assign(**missing)
    rows = group_index(keyed)
    # grouped by the row number (one integer key), not the five text keys again: the keys are
    # factorised once, in group_index (a million launches: a second factorisation costs ~0.5 s)
    table = aggregate(
        keyed.assign(_row=rows.to_numpy()), ["_row"],
        **{key: (key, "first") for key in GROUP_KEY},
        op_family=("op_family", "first"),
        device=("device", "first"),
        origin=("origin", "first"),
        calls=("time_s", "size"),
        cost_note=("cost_note", "first"),
        blocks=("blocks", "median"),
        threads_per_block=("threads_per_block", "median"),
        registers_per_thread=("registers_per_thread", "median"),
        shared_bytes_per_block=("shared_bytes_per_block", "median"),
        unit=("unit", "first"),
        precision=("precision", "first"),
        source_function=("source_function", "first"),
        source_call=("source_call", "first"),
    ).drop(columns="_row")
    return table[GROUP_KEY + [c for c in table.columns if c not in GROUP_KEY]], rows


def group_index(launches: pd.DataFrame) -> pd.Series:
    """Each launch's row in group_launches' table (groups numbered in first-seen order)."""
    keys = [k for k in GROUP_KEY if k in launches.columns]  # no source, op_args: launches kept before they existed
    return launches.reset_index(drop=True).groupby(keys, sort=False, dropna=False).ngroup()
