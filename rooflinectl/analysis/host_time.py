"""What the host did during the counted work, where the trace shows it: synchronisations (the host
waited for the device, which then sat idle until the host launched again) and time outside any op
(the Python interpreter between launches: loop bookkeeping, data handling, logging).

Pure: trace events and launches in, figures out (summary keys host_*). Sync calls come from the
runtime (capture/read/spec.py SYNC_CALLS); `.item()`, `.cpu()`, `print(tensor)` and `bool(tensor)` show
up as cudaStreamSynchronize under aten::_local_scalar_dense or aten::copy_.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd

from rooflinectl.attribution.spans import length_inside, span_index
from rooflinectl.capture.read.raw import RawTrace

TOP_SYNC_OPS = 5


def host_figures(trace: RawTrace, launches: pd.DataFrame, spans_ns: list[tuple[int, int]]) -> dict[str, object]:
    """Sync calls inside the spans (count, host time blocked, the ops that made them), the device
    idle time they cost, and host time outside any op.

    A sync's cost: the device sat idle from the last kernel before it to the first kernel after
    it; without the wait the host would have done what it did next that much earlier, so at most
    the time it was blocked comes off that idle time: min(idle, blocked time) per sync (a sleep
    or a data load after the sync is the host's own time, not the sync's)."""
    if not spans_ns:
        return {}
    sync_ts = np.array([s.ts_ns for s in trace.syncs], dtype=np.int64)
    syncs = [s for s, i in zip(trace.syncs, span_index(sync_ts, spans_ns)) if i >= 0]
    names = {op.external_id: op.name for op in trace.ops if op.external_id >= 0}
    causes = Counter(names.get(s.external_id, s.name) for s in syncs)
    order = launches.sort_values("launch_ns", kind="stable")
    launch_ns = order["launch_ns"].to_numpy(dtype=np.int64)
    start_ns = order["start_ns"].to_numpy(dtype=np.int64)
    end_so_far = np.maximum.accumulate(order["end_ns"].to_numpy(dtype=np.int64)) if len(order) else launch_ns
    idle_after: dict[int, int] = {}  # next kernel -> idle before it, counted once per kernel
    for s in syncs:
        nxt = int(np.searchsorted(launch_ns, s.ts_ns + s.dur_ns, side="left"))
        before = int(np.searchsorted(launch_ns, s.ts_ns, side="left")) - 1
        if nxt >= len(launch_ns) or before < 0 or span_index(launch_ns[nxt:nxt + 1], spans_ns)[0] < 0:
            continue
        idle = max(int(start_ns[nxt] - end_so_far[before]), 0)
        idle_after[nxt] = max(idle_after.get(nxt, 0), min(idle, s.dur_ns))
    op_starts, op_ends, is_cpu_op = trace.op_times_ns()
    busy_host = length_inside(
        np.concatenate((op_starts[is_cpu_op], np.array([s.ts_ns for s in trace.syncs], dtype=np.int64))),
        np.concatenate((op_ends[is_cpu_op], np.array([s.ts_ns + s.dur_ns for s in trace.syncs], dtype=np.int64))),
        spans_ns)
    return {
        "host_sync_calls": len(syncs),
        "host_sync_s": sum(s.dur_ns for s in syncs) / 1e9,
        "host_sync_idle_s": sum(idle_after.values()) / 1e9,
        "host_sync_ops": [[name, count] for name, count in causes.most_common(TOP_SYNC_OPS)],
        "host_outside_ops_s": max(sum(b - a for a, b in spans_ns) - busy_host, 0) / 1e9,
    }
