"""The one interval union (attribution/spans.py) against intervals worked out by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rooflinectl.analysis.roofline import summarise
from rooflinectl.attribution.spans import merge_spans, union, union_length

# (intervals, their union by hand): overlap, containment, touching ends (merged), a gap, unsorted input
HAND = [
    ([], []),
    ([(5, 9)], [(5, 9)]),
    ([(0, 10), (5, 20)], [(0, 20)]),
    ([(0, 100), (10, 20), (30, 40)], [(0, 100)]),
    ([(0, 10), (10, 15)], [(0, 15)]),
    ([(30, 40), (0, 10), (12, 14), (35, 50), (13, 20)], [(0, 10), (12, 20), (30, 50)]),
]


@pytest.mark.parametrize("intervals, merged", HAND)
def test_union_by_hand(intervals: list[tuple[int, int]], merged: list[tuple[int, int]]) -> None:
    assert merge_spans(intervals) == merged
    starts = np.array([a for a, _ in intervals], dtype=np.int64)
    ends = np.array([b for _, b in intervals], dtype=np.int64)
    lo, hi = union(starts, ends)
    assert list(zip(lo.tolist(), hi.tolist())) == merged
    assert union_length(starts, ends) == sum(b - a for a, b in merged)


def test_device_busy_time_counts_overlap_once() -> None:
    """summarise's device busy time: two streams overlapping 40 ns, then a gap, over a 200 ns window."""
    launches = pd.DataFrame({"start_ns": [0, 60, 150], "end_ns": [100, 120, 170], "time_s": [1e-7, 6e-8, 2e-8]})
    table = pd.DataFrame({"time_s": [1.8e-7], "cost_source": ["analytic"]})
    s = summarise(table, launches, 200e-9, [], 1)
    assert s["device_busy_s"] == pytest.approx(140e-9)
    assert s["device_idle_s"] == pytest.approx(60e-9)


def _covered_points(intervals: list[tuple[int, int]], spans: list[tuple[int, int]]) -> int:
    """Brute force on integer points: unit cells [x, x + 1) inside an interval and a span."""
    return sum(1 for x in range(-5, 60)
               if any(a <= x < b for a, b in intervals) and any(s <= x < e for s, e in spans))


@pytest.mark.parametrize("seed", range(40))
def test_length_inside_spans_matches_counting_points(seed: int) -> None:
    import random

    from rooflinectl.attribution.spans import length_inside

    rng = random.Random(seed)
    intervals = [(a, a + rng.randint(0, 12)) for a in (rng.randint(-3, 45) for _ in range(rng.randint(0, 8)))]
    cuts = sorted(rng.sample(range(0, 55), 2 * rng.randint(0, 4)))
    spans = list(zip(cuts[::2], cuts[1::2]))  # sorted, disjoint, some touching nothing
    starts = np.array([a for a, _ in intervals], dtype=np.int64)
    ends = np.array([b for _, b in intervals], dtype=np.int64)
    assert length_inside(starts, ends, spans) == _covered_points(intervals, spans)


def test_length_inside_by_hand() -> None:
    from rooflinectl.attribution.spans import length_inside

    # an op across two iterations counts only what lies inside them; overlapping ops count once
    starts, ends = np.array([0, 5, 8, 30]), np.array([12, 9, 25, 31])
    assert length_inside(starts, ends, [(2, 10), (20, 24)]) == 8 + 4
    assert length_inside(starts, ends, []) == 0


def test_span_index_closed_takes_the_end_in() -> None:
    import numpy as np

    from rooflinectl.attribution.spans import span_index

    times = np.array([9, 10, 15, 20, 21, 30, 31], dtype=np.int64)
    spans = [(10, 20), (30, 40)]
    assert span_index(times, spans).tolist() == [-1, 0, 0, -1, -1, 1, 1]
    assert span_index(times, spans, closed=True).tolist() == [-1, 0, 0, 0, -1, 1, 1]
