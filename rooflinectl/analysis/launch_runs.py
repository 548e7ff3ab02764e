"""Runs of back-to-back launches of one kernel-table row, and what each run costs on the device's
timeline: a Python loop that launches the same small op n times in a row (over heads, experts of
equal load, ensemble members, chunks) costs the span of the run, first kernel start to last
kernel end, the idle gaps in which the GPU waits for the host's next launch included, not only
its kernels' time. The kernel table keeps per-row totals and the launch sequence keeps no times,
so the runs are measured here, when the profile is built (summary "back_to_back_runs").

Pure: launches in, a list of plain entries out (JSON-ready).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from rooflinectl.aggregate import flag_each_distinct
from rooflinectl.attribution.spans import span_index

MIN_RUN = 4  # a row launched at least this many times back to back is a run
MAX_ENTRIES = 1000  # (row, run length) entries kept, longest total span first


def back_to_back_runs(launches: pd.DataFrame, rows: pd.Series, spans_ns: list[tuple[int, int]],
                      transparent: Callable[[str], bool]) -> list[dict[str, float | int]]:
    """Per (row, run length): how many runs, their summed span (first kernel start to last kernel
    end, seconds) and busy time (union of their kernels' intervals, seconds).

    launches: the counted launches (kernel, launch_ns, start_ns, end_ns); rows: each launch's
    kernel-table row (same index); spans_ns: the counted host spans (iterations, regions): a run
    never crosses from one to the next, since work of two iterations cannot be one call;
    transparent(kernel name): a side kernel (a split-K GEMM's reduction) that neither breaks a run
    nor counts in its length; its time is the run's when it comes before the next launch of
    another row.
    """
    if len(launches) == 0:
        return []
    order = launches.assign(row=rows.reindex(launches.index)).sort_values("launch_ns", kind="stable")
    helper = flag_each_distinct(order["kernel"], transparent)
    row = order["row"].to_numpy(dtype=np.int64)
    place = span_index(order["launch_ns"].to_numpy(dtype=np.int64), spans_ns) if spans_ns else np.zeros(len(order), int)
    main = ~helper
    key_row, key_place = row[main], place[main]
    new_run = np.ones(len(key_row), dtype=bool)
    new_run[1:] = (key_row[1:] != key_row[:-1]) | (key_place[1:] != key_place[:-1])
    run_of_main = np.cumsum(new_run) - 1
    run = np.full(len(order), -1, dtype=np.int64)
    run[main] = run_of_main
    run = np.maximum.accumulate(run)  # a side kernel belongs to the run before it (-1: before any)
    table = pd.DataFrame({"run": run, "main": main, "row": np.where(main, row, -1),
                          "start": order["start_ns"].to_numpy(dtype=np.int64),
                          "end": order["end_ns"].to_numpy(dtype=np.int64)})
    table = table[table["run"] >= 0]
    length = table.groupby("run")["main"].sum()
    long_runs = length[length >= MIN_RUN].index
    table = table[table["run"].isin(long_runs)].sort_values(["run", "start"], kind="stable")
    if table.empty:
        return []
    grouped = table.groupby("run")
    prior_end = grouped["end"].cummax().groupby(table["run"]).shift()  # latest end before each kernel
    gap_ns = (table["start"] - prior_end).clip(lower=0).fillna(0)
    per_run = pd.DataFrame({
        "row": grouped["row"].max(), "length": length.loc[long_runs],
        "span_ns": grouped["end"].max() - grouped["start"].min(),
        "gap_ns": gap_ns.groupby(table["run"]).sum(),
    })
    per_run["busy_ns"] = per_run["span_ns"] - per_run["gap_ns"]
    entries = per_run.groupby(["row", "length"]).agg(runs=("span_ns", "size"), span_ns=("span_ns", "sum"),
                                                     busy_ns=("busy_ns", "sum")).reset_index()
    entries = entries.sort_values(["span_ns", "row", "length"], ascending=[False, True, True]).head(MAX_ENTRIES)
    return [{"row": int(e.row), "length": int(e.length), "runs": int(e.runs), "span_s": float(e.span_ns) / 1e9,
             "busy_s": float(e.busy_ns) / 1e9} for e in entries.itertuples(index=False)]
