"""Runs of back-to-back launches of one row (analysis/launch_runs.py): lengths, spans and busy time
of hand-made launch tables, and of the H200's small_gemms capture against its raw kernel events."""

from __future__ import annotations

import pandas as pd
import pytest
from recorded_examples import example_capture

from rooflinectl.analysis.launch_runs import back_to_back_runs


def table(launches: list[tuple[str, int, int, int]]) -> tuple[pd.DataFrame, pd.Series]:
    """(kernel, row, start_ns, end_ns) in launch order; launched 5 ns before the kernel starts."""
    frame = pd.DataFrame([{"kernel": k, "start_ns": s, "end_ns": e, "launch_ns": s - 5} for k, _, s, e in launches],
                         index=range(100, 100 + len(launches)))  # an index that is not 0..n: rows go by index
    return frame, pd.Series([r for _, r, _, _ in launches], index=frame.index)


def helper(name: str) -> bool:
    return name == "reduce"


def test_runs_spans_and_busy_time_by_hand():
    launches = [("a", 0, 100 + 20 * i, 105 + 20 * i) for i in range(4)]  # 4 of 5 ns, 15 ns gaps: span 65, busy 20
    launches += [("b", 1, 200, 210)]
    launches += [("a", 0, 220 + 10 * i, 225 + 10 * i) for i in range(3)]  # 3: too short to be a run
    launches += [("b", 1, 260, 270)]
    for i in range(5):  # 5, each with a split-K reduction after it: span 392 - 300 = 92, busy 5 x 12 = 60
        launches += [("a", 0, 300 + 20 * i, 310 + 20 * i), ("reduce", 2, 310 + 20 * i, 312 + 20 * i)]
    launches += [("c", 3, 500, 520), ("c", 3, 510, 530), ("c", 3, 540, 550), ("c", 3, 545, 560)]  # two streams:
    frame, rows = table(launches)  # span 60, busy the union [500, 530] + [540, 560] = 50
    runs = back_to_back_runs(frame, rows, [], helper)
    assert runs == [
        {"row": 0, "length": 5, "runs": 1, "span_s": 92e-9, "busy_s": 60e-9},
        {"row": 0, "length": 4, "runs": 1, "span_s": 65e-9, "busy_s": 20e-9},
        {"row": 3, "length": 4, "runs": 1, "span_s": 60e-9, "busy_s": 50e-9},
    ]


def test_a_run_ends_where_an_iteration_ends():
    """Eight launches of one row over two iterations are two runs of 4, not one of 8: the gap
    between the iterations (300 ns here) is no part of either."""
    launches = [("a", 0, 100 + 10 * i, 105 + 10 * i) for i in range(4)]
    launches += [("a", 0, 440 + 10 * i, 445 + 10 * i) for i in range(4)]
    frame, rows = table(launches)
    whole = back_to_back_runs(frame, rows, [], helper)
    assert whole == [{"row": 0, "length": 8, "runs": 1, "span_s": 375e-9, "busy_s": 40e-9}]
    split = back_to_back_runs(frame, rows, [(0, 200), (400, 500)], helper)
    assert split == [{"row": 0, "length": 4, "runs": 2, "span_s": 2 * 35e-9, "busy_s": 40e-9}]


def test_no_launches_no_runs():
    frame, rows = table([])
    assert back_to_back_runs(frame.reindex(columns=["kernel", "start_ns", "end_ns", "launch_ns"]), rows, [], helper) == []
    frame, rows = table([(("a", "b")[i % 2], i % 2, 10 + 20 * i, 20 + 20 * i) for i in range(8)])  # a layer stack
    assert back_to_back_runs(frame, rows, [], helper) == []


def test_the_h200_small_gemms_runs_are_the_kernels_first_start_to_last_end():
    """examples/small_gemms.py on the H200: 5 steps, each 64 mm in a row then one cat. Each step's
    span, read straight off the trace's kernel events (first nvjet start to last nvjet end between
    two cat kernels), is what the profile keeps."""
    capture, data = example_capture("small_gemms")
    kernels = sorted(capture.trace.kernels, key=lambda k: k.ts_ns)
    spans, busy, first = [], [], None
    for k in kernels:
        if k.name.startswith("nvjet"):
            if first is None:
                first, busy_ns = k.ts_ns, 0
            last, busy_ns = k.end_ns, busy_ns + k.end_ns - k.ts_ns
        elif first is not None:
            spans.append(last - first)
            busy.append(busy_ns)
            first = None
    (entry,) = data.summary["back_to_back_runs"]
    spans, busy = spans[1:], busy[1:]  # the first is the example's warm-up call, before the profiled steps (setup)
    assert len(spans) == 5 and entry["length"] == 64 and entry["runs"] == 5
    assert entry["span_s"] == pytest.approx(sum(spans) / 1e9)
    assert entry["busy_s"] == pytest.approx(sum(busy) / 1e9)
    assert 1.5e-3 < entry["span_s"] / 5 < 2.5e-3  # about 30 us per launch under the profiler, 2.1 us of it kernel
