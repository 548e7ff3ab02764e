"""One rank's communication against its compute: how much of the collectives' time other device
work hid, and how much was exposed (nothing else ran: the step waited for the network).

On the device timeline (GPU: kernel intervals; CPU with gloo: the worker thread's collective
spans against the ops of the other threads), with C = union of the collectives' intervals and
W = union of all other work's intervals:
  busy_s        = |C|
  overlapped_s  = |C ∩ W|   (communication hidden behind compute)
  exposed_s     = |C| - |C ∩ W|
Per collective launch, its own exposed time is |launch - W|. A collective's kernel time includes
the time it waited for the other ranks to arrive (NCCL kernels start, then wait for their peers);
that part is only known by comparing ranks (analysis/ranks.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from rooflinectl.attribution.spans import union
from rooflinectl.profile_sections import Communication

MAX_COLLECTIVES = 10_000  # per-launch records kept in the summary
COLLECTIVE_FIELDS = ("op", "shapes", "dtype", "bytes", "time_s", "exposed_s", "start_s")


def covered_ns(starts: np.ndarray, ends: np.ndarray, cover: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """For each interval [start, end), the nanoseconds of it inside the merged intervals `cover`."""
    cs, ce = cover
    if len(cs) == 0:
        return np.zeros(len(starts), dtype=np.int64)
    prefix = np.concatenate(([0], np.cumsum(ce - cs)))

    def covered_before(t: np.ndarray) -> np.ndarray:
        """Covered nanoseconds in (-inf, t)."""
        i = np.searchsorted(cs, t, side="right")  # intervals starting at or before t
        full = prefix[np.maximum(i - 1, 0)]
        last = np.clip(t - cs[np.maximum(i - 1, 0)], 0, (ce - cs)[np.maximum(i - 1, 0)])
        return np.where(i > 0, full + last, 0)

    return covered_before(ends.astype(np.int64)) - covered_before(starts.astype(np.int64))


def communication_summary(launches: pd.DataFrame, iterations: int = 1) -> Communication | None:
    """The summary's "communication" figures of one rank's counted launches; None without collectives.

    iterations: how many iterations the launches cover (per-iteration figures divide by it)."""
    if launches.empty or "op_family" not in launches.columns:
        return None
    comm = (launches["op_family"] == "collective").to_numpy()
    if not comm.any():
        return None
    starts = launches["start_ns"].to_numpy(dtype=np.int64)
    ends = launches["end_ns"].to_numpy(dtype=np.int64)
    other = union(starts[~comm], ends[~comm])
    comm_union = union(starts[comm], ends[comm])
    busy_ns = int((comm_union[1] - comm_union[0]).sum())
    overlapped_ns = int(covered_ns(comm_union[0], comm_union[1], other).sum())
    exposed_each = (ends[comm] - starts[comm]) - covered_ns(starts[comm], ends[comm], other)
    picked = launches.loc[comm]
    order = np.argsort(starts[comm], kind="stable")[:MAX_COLLECTIVES]
    first_ns = int(starts.min())
    records = [[str(picked["op"].iloc[i]), str(picked["shapes"].iloc[i]), str(picked["dtype"].iloc[i]),
                _number(picked["bytes"].iloc[i]), float(picked["time_s"].iloc[i]), int(exposed_each[i]) / 1e9,
                (int(starts[comm][i]) - first_ns) / 1e9] for i in order]
    n = max(int(iterations), 1)
    return {
        "iterations": n,
        "launches": int(comm.sum()),
        "collective_time_s": float(picked["time_s"].sum()),
        "bus_bytes": _number(picked["bytes"].sum(min_count=len(picked))),
        "busy_s": busy_ns / 1e9,
        "overlapped_s": overlapped_ns / 1e9,
        "exposed_s": (busy_ns - overlapped_ns) / 1e9,
        "exposed_per_iteration_s": (busy_ns - overlapped_ns) / 1e9 / n,
        "compute_busy_s": int((other[1] - other[0]).sum()) / 1e9,
        "collective_fields": list(COLLECTIVE_FIELDS),
        "collectives": records,
    }


def _number(value: Any) -> float | None:
    value = float(value)
    return None if value != value else value
