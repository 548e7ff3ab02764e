"""Each launch's tensor reads and writes: those of the op that launched it (capture/run/
tensor_accesses.py records them per op), for the analytic memory level (analysis/memory_levels.py).

A GPU kernel's op is the one whose External id it carries (the op active at launch, its
innermost); a CPU launch is an op itself (the same start). Launches of ops without a record
(Inductor's kernels, a graph replay, a long run past the recorded ops) get None: the analysis
falls back to shapes for those.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from rooflinectl.capture.read.raw import RawOp, RawTrace

Accesses = tuple[list[int], list[int]]  # reads, writes: [identity, bytes, ...] each


def launch_accesses(trace: RawTrace, launches: pd.DataFrame, device_kind: str) -> list[Accesses | None]:
    """Per launch (the frame's order), its op's (reads, writes), or None."""
    recorded = [op for op in trace.ops if op.category == "cpu_op" and (op.tensor_reads or op.tensor_writes)]
    if not recorded or not len(launches):
        return [None] * len(launches)
    if device_kind == "cuda":
        by_external = {op.external_id: (op.tensor_reads, op.tensor_writes) for op in recorded}
        external_of = {k.correlation: k.external_id for k in trace.kernels}
        correlations = launches["correlation"].to_numpy(dtype=np.int64) if "correlation" in launches.columns \
            else np.full(len(launches), -1)
        return [by_external.get(external_of.get(c, -1)) for c in correlations.tolist()]
    longest: dict[int, RawOp] = {}  # the outermost op starting at a time holds its children's allocations too
    for op in recorded:
        if op.ts_ns not in longest or op.dur_ns > longest[op.ts_ns].dur_ns:
            longest[op.ts_ns] = op
    by_start = {ts: (op.tensor_reads, op.tensor_writes) for ts, op in longest.items()}
    starts = launches["start_ns"].to_numpy(dtype=np.int64) if "start_ns" in launches.columns \
        else np.full(len(launches), -1)
    return [by_start.get(s) for s in starts.tolist()]
