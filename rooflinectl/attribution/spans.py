"""Spans of host time ([start, end] in trace nanoseconds): their union, and which span holds a time.
Regions, iterations and compile phases are all spans."""

from __future__ import annotations

import numpy as np


def merge_spans(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted union of [start, end] spans."""
    merged: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return merged


def span_index(times_ns: np.ndarray, spans: list[tuple[int, int]]) -> np.ndarray:
    """For each time, the index of the [start, end) span holding it, -1 when none (spans sorted,
    disjoint)."""
    if not spans or len(times_ns) == 0:
        return np.full(len(times_ns), -1, dtype=int)
    starts = np.array([a for a, _ in spans], dtype=np.int64)
    ends = np.array([b for _, b in spans], dtype=np.int64)
    i = np.searchsorted(starts, times_ns, side="right") - 1
    inside = (i >= 0) & (times_ns < ends[np.clip(i, 0, None)])
    return np.where(inside, i, -1)
