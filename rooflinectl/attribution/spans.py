"""Spans of host time ([start, end] in trace nanoseconds): their union, and which span holds a time.
Regions, iterations and compile phases are all spans."""

from __future__ import annotations

import numpy as np


def union(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merged, sorted intervals covering the given ones (touching intervals merge), as (starts,
    ends) arrays: the one interval union every stage uses (spans, device busy time, host time,
    communication against compute), vectorised for a million launches."""
    starts, ends = np.asarray(starts), np.asarray(ends)
    if len(starts) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], ends[order]
    running_end = np.maximum.accumulate(e)
    new = np.concatenate(([True], s[1:] > running_end[:-1]))
    # each merged interval ends where the running end stands at its last member (ends >= starts)
    last = np.concatenate((np.flatnonzero(new)[1:] - 1, [len(e) - 1]))
    return s[new], running_end[last]


def union_length(starts: np.ndarray, ends: np.ndarray) -> int | float:
    """The length the intervals cover together (overlaps counted once)."""
    lo, hi = union(starts, ends)
    return (hi - lo).sum().item() if len(lo) else 0


def length_inside(starts: np.ndarray, ends: np.ndarray, spans: list[tuple[int, int]]) -> int:
    """The length the intervals cover together (overlaps once) inside the spans (sorted, disjoint).

    Vectorised: with F(x) the length of the spans up to x, an interval [a, b] covers F(b) - F(a)
    of them, and the union of the intervals is disjoint, so the sum over it is the answer."""
    lo, hi = union(np.asarray(starts, dtype=np.int64), np.asarray(ends, dtype=np.int64))
    if not spans or len(lo) == 0:
        return 0
    span_starts = np.array([a for a, _ in spans], dtype=np.int64)
    span_ends = np.array([b for _, b in spans], dtype=np.int64)
    before = np.concatenate(([0], np.cumsum(span_ends - span_starts)))  # length of the spans before each

    def up_to(x: np.ndarray) -> np.ndarray:
        j = np.searchsorted(span_starts, x, side="right") - 1
        k = np.clip(j, 0, None)
        return np.where(j >= 0, before[k] + np.minimum(x, span_ends[k]) - span_starts[k], 0)

    return int((up_to(hi) - up_to(lo)).sum())


def merge_spans(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted union of [start, end] spans, as a list of (start, end) in Python ints."""
    lo, hi = union(np.array([a for a, _ in spans], dtype=np.int64), np.array([b for _, b in spans], dtype=np.int64))
    return list(zip(lo.tolist(), hi.tolist()))


def span_index(times_ns: np.ndarray, spans: list[tuple[int, int]], closed: bool = False) -> np.ndarray:
    """For each time, the index of the [start, end) span holding it ([start, end] if closed), -1
    when none (spans sorted, disjoint)."""
    if not spans or len(times_ns) == 0:
        return np.full(len(times_ns), -1, dtype=int)
    starts = np.array([a for a, _ in spans], dtype=np.int64)
    ends = np.array([b for _, b in spans], dtype=np.int64)
    i = np.searchsorted(starts, times_ns, side="right") - 1
    end = ends[np.clip(i, 0, None)]
    inside = (i >= 0) & ((times_ns <= end) if closed else (times_ns < end))
    return np.where(inside, i, -1)
