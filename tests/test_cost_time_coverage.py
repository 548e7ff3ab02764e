"""No time without a row (issue 34): on a CPU run, the rows' times add up to the trace's device time
exactly, an uncosted op keeps its own time (not its metadata child's), and the known-cost share
is computed from time. The device time is computed here from the raw trace alone: the outermost
aten ops, less those under which nothing but views and allocations ran."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from rooflinectl.attribution.join import attribute
from rooflinectl.capture.run.region import CALIBRATION_NAME, WARMUP_NAME
from rooflinectl.capture.run.session import profiling
from rooflinectl.costs import NO_WORK_OPS


def _trace(fn, repeat: int = 1):
    fn()
    with profiling("cpu") as capture:
        for _ in range(repeat):
            fn()
    return capture.trace


def _device_time_ns(trace) -> int:
    """Outermost cpu_op durations per thread, less subtrees made only of views and allocations and
    the profiler-overhead probe rooflinectl's capture runs first (not the user's work)."""
    ops = sorted(trace.ops, key=lambda o: (o.tid, o.ts_ns, -o.dur_ns))
    total, stack, current_tid = 0, [], None
    outer: list[list] = []  # [op, any_work]
    for op in ops:
        if op.tid != current_tid:
            stack, current_tid = [], op.tid
        while stack and stack[-1].end_ns <= op.ts_ns:
            stack.pop()
        if any(s.name in (CALIBRATION_NAME, WARMUP_NAME) for s in stack):
            pass
        elif op.category == "cpu_op":
            works = "::" in op.name and not op.name.startswith(("autograd::", "torch::autograd::")) \
                and op.name not in NO_WORK_OPS
            if not any(s.category == "cpu_op" for s in stack):
                outer.append([op, works])
            elif works and outer:
                outer[-1][1] = True
        stack.append(op)
    for op, works in outer:
        total += op.dur_ns if works else 0
    return total


def _rows(fn, repeat: int = 1):
    trace = _trace(fn, repeat)
    return trace, attribute(trace, "cpu", {}).launches


@pytest.mark.parametrize("case", ["nonzero", "histc", "mlp_train"])
def test_rows_add_up_to_the_device_time(case):
    x = torch.randn(256, 256)
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    data, target = torch.randn(32, 64), torch.randint(0, 10, (32,))

    def step():
        F.cross_entropy(model(data), target).backward()

    fn = {"nonzero": lambda: (x > 0).nonzero(), "histc": lambda: torch.histc(x), "mlp_train": step}[case]
    trace, rows = _rows(fn, repeat=2)
    expected_s = _device_time_ns(trace) / 1e9
    assert expected_s > 0
    assert rows["time_s"].sum() == pytest.approx(expected_s, rel=1e-9, abs=1e-12)


def test_nonzero_is_its_own_row_not_its_metadata_child():
    """The issue's case: nonzero's as_strided_ child took the row (and 99.8% "known"); now nonzero
    holds its whole time, costed from its output's restride: the mask read, 2 x count int64 written."""
    x = torch.randn(512, 512)
    count = int((x > 0).sum())
    trace, rows = _rows(lambda: (x > 0).nonzero())
    nonzero = [o for o in trace.ops if o.name == "aten::nonzero"][0]
    row = rows[rows["op"] == "aten::nonzero"]
    assert len(row) == 1
    assert row["time_s"].iloc[0] == pytest.approx(nonzero.dur_ns / 1e9)
    assert row["bytes"].iloc[0] == 512 * 512 + 8 * 2 * count
    assert "aten::as_strided_" not in set(rows["op"])


def test_uncosted_parent_of_costed_children_keeps_its_remainder():
    """histc's aminmax and fill_ children are costed; histc's own loop is not, and is a row."""
    x = torch.randn(512, 512)
    trace, rows = _rows(lambda: torch.histc(x))
    histc = [o for o in trace.ops if o.name == "aten::histc"][0]
    own = rows[(rows["op"] == "aten::histc") & (rows["cost_source"] == "none")]
    assert len(own) == 1 and "its own time only" in own["cost_note"].iloc[0]
    assert own["time_s"].sum() + rows.loc[rows["op"] != "aten::histc", "time_s"].sum() == \
        pytest.approx(histc.dur_ns / 1e9, rel=1e-9)
