"""The CPU attribution path on real profiled runs, and kernel-table grouping.

CPU rules (rooflinectl/attribution/join.py): the unit of work is the outermost op with a cost
formula; an op without formula and without a costed op below it is unknown work, unless it is a
view/allocation or an autograd node; with `rooflinectl.region` blocks only work inside them counts.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest
import torch

import rooflinectl
from rooflinectl.aggregate import common_module
from rooflinectl.attribution.group import group_launches
from rooflinectl.attribution.join import LAUNCH_COLUMNS, attribute
from rooflinectl.capture.run.session import profiling


@pytest.fixture(scope="module")
def mlp_run():
    """Forward and backward of Sequential(Linear(16, 32), ReLU, Linear(32, 8)) on a [4, 16] batch."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8))
    x = torch.randn(4, 16, requires_grad=True)
    with profiling("cpu") as cap:
        model(x).sum().backward()
    return cap, attribute(cap.trace, "cpu", cap.metadata)


def test_columns_and_cpu_fields(mlp_run):
    _, attributed = mlp_run
    launches = attributed.launches
    assert list(launches.columns) == LAUNCH_COLUMNS
    assert len(launches) > 0
    assert set(launches["device"]) == {"cpu"}
    assert set(launches["origin"]) == {"aten"}
    assert (launches["time_s"] > 0).all()
    assert (launches["end_ns"] >= launches["start_ns"]).all()
    assert attributed.regions == []
    # no region: the window spans the first unit's start to the last one's end
    span = (launches["end_ns"].max() - launches["start_ns"].min()) / 1e9
    assert attributed.window_s == pytest.approx(span)


def test_linear_counted_once_as_addmm(mlp_run):
    cap, attributed = mlp_run
    launches = attributed.launches
    forward = launches[launches["module"].str.startswith("Sequential") & ~launches["module"].str.endswith("(backward)")]
    # aten::linear (no formula) -> aten::addmm (the outermost costed op); its copy_/t children
    # are inside it and not counted again
    assert list(forward["op"]) == ["aten::addmm", "aten::relu", "aten::addmm"]
    assert "aten::copy_" in {op.name for op in cap.trace.ops}  # addmm's bias copy ran...
    assert "aten::copy_" not in set(launches["op"])  # ...but only its parent carries cost (and its bytes)
    fc1 = forward.iloc[0]
    assert fc1["flops"] == 2 * 4 * 32 * 16  # 2*M*N*K
    assert fc1["min_bytes"] == (32 + 4 * 16 + 16 * 32 + 4 * 32) * 4  # bias, x, W, out (fp32)
    assert fc1["bytes"] == fc1["min_bytes"] + (32 + 4 * 32) * 4  # what ran: the bias copied into out first
    assert "executed" in fc1["cost_note"]
    assert fc1["shapes"] == "[32] x [4, 16] x [16, 32]"
    assert (fc1["op_family"], fc1["dtype"], fc1["unit"], fc1["precision"]) == ("gemm", "fp32", "simt", "fp32")
    assert fc1["cost_source"] == "analytic"


def test_module_paths(mlp_run):
    _, attributed = mlp_run
    launches = attributed.launches
    modules = list(launches["module"])
    assert modules[:3] == ["Sequential.0", "Sequential.1", "Sequential.2"]
    assert "" in modules[3:]  # the loss (sum) ran outside any module
    # backward work carries the module of the forward op it differentiates (autograd's sequence
    # number links them): the weight and input gradients of each Linear, the ReLU's threshold_backward
    backward = launches[launches["module"].str.endswith("(backward)")]
    by_module = backward.groupby("module")["op"].apply(set).to_dict()
    assert by_module["Sequential.2 (backward)"] >= {"aten::mm"}
    assert by_module["Sequential.1 (backward)"] == {"aten::threshold_backward"}
    assert by_module["Sequential.0 (backward)"] >= {"aten::mm"}
    mm_grads = backward[backward["op"] == "aten::mm"]
    assert set(mm_grads["flops"]) <= {2 * 4 * 32 * 8, 2 * 32 * 4 * 16, 2 * 4 * 8 * 32, 2 * 4 * 32 * 16}


def test_views_and_autograd_nodes_are_not_unknown_work(mlp_run):
    cap, attributed = mlp_run
    names = {op.name for op in cap.trace.ops}
    assert {"aten::t", "aten::transpose", "aten::as_strided"} <= names  # views were recorded
    assert any(n.startswith("autograd::") or "Backward" in n for n in names)  # autograd ran
    launches = attributed.launches
    assert (launches["cost_source"] == "analytic").all(), launches[launches["cost_source"] != "analytic"]
    assert not launches["op"].str.contains("Backward|autograd|aten::t$|aten::view", regex=True).any()
    # backward GEMMs: grad_input and grad_weight for each Linear
    assert (launches["op"] == "aten::mm").sum() == 4


def test_unknown_work_is_counted_with_nan_cost():
    x = torch.randn(6, 8)
    with profiling("cpu") as cap:
        x.view(8, 6).t().unsqueeze(0)  # metadata only: no unit of work
        torch.trace(x)  # no formula, nothing costed inside
    launches = attribute(cap.trace, "cpu", cap.metadata).launches
    assert list(launches["op"]) == ["aten::trace"]
    row = launches.iloc[0]
    assert row["cost_source"] == "none"
    assert math.isnan(row["flops"]) and math.isnan(row["bytes"])
    assert row["shapes"] == "[6, 8]"


def test_regions_limit_what_is_counted():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 8))
    x = torch.randn(4, 16)
    with profiling("cpu") as cap:
        y = x * 2  # outside: not counted
        with rooflinectl.region("step"):
            model(x)
        y = y + 1  # outside
        with rooflinectl.region("extra"):
            torch.exp(x)
    attributed = attribute(cap.trace, "cpu", cap.metadata)
    launches = attributed.launches
    assert list(launches["op"]) == ["aten::addmm", "aten::exp"]
    assert attributed.regions == ["extra", "step"]
    assert list(launches["module"]) == ["Sequential.0", ""]
    spans = [(op.ts_ns, op.end_ns) for op in cap.trace.ops if op.name.startswith("rooflinectl.region:")]
    assert len(spans) == 2
    # the window is, per region, the span of the work counted in it: here one op per region
    work = (launches["end_ns"] - launches["start_ns"]).sum()
    assert attributed.window_s == pytest.approx(work / 1e9)
    assert attributed.window_s <= sum(b - a for a, b in spans) / 1e9


# --- grouping ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("paths", "expected"), [
    (["Model.blocks.0.attn", "Model.blocks.0.mlp"], "Model.blocks.0"),
    (["Model.layer.10", "Model.layer.1"], "Model.layer"),  # whole components, not characters
    (["Model.fc", "", "Model.fc"], "Model.fc"),  # empty paths ignored
    (["", ""], ""),
    (["A.x", "B.y"], ""),
    (["Only.one"], "Only.one"),
])
def test_common_module(paths, expected):
    assert common_module(pd.Series(paths)) == expected


def _launch(kernel, op, shapes, time_s, flops, nbytes, module="", start=0, **extra):
    row = {c: math.nan for c in LAUNCH_COLUMNS}
    row.update(kernel=kernel, op=op, op_family=extra.get("family", "gemm"), module=module, shapes=shapes,
               dtype="fp32", device="cpu", origin="aten", time_s=time_s, flops=flops, bytes=nbytes,
               cost_source="analytic" if not math.isnan(flops) else "none", cost_note="",
               unit="simt", precision="fp32", start_ns=start, end_ns=start + 1)
    return row


def test_group_launches():
    rows = [
        _launch("aten::mm", "aten::mm", "[4, 8] x [8, 2]", 1e-3, 128.0, 100.0, "M.a", start=0),
        _launch("aten::exp", "aten::exp", "[4]", 1e-4, 4.0, 32.0, "M.b", start=1, family="elementwise"),
        _launch("aten::mm", "aten::mm", "[4, 8] x [8, 2]", 3e-3, 128.0, 100.0, "M.c", start=2),
        _launch("aten::flip", "aten::flip", "[4]", 2e-4, math.nan, math.nan, "", start=3),
        _launch("aten::flip", "aten::flip", "[4]", 2e-4, math.nan, math.nan, "", start=4),
        _launch("aten::mm", "aten::mm", "[2, 8] x [8, 2]", 5e-4, 64.0, 60.0, "M.a", start=5),
        _launch("aten::mm", "aten::mm", "[4, 8] x [8, 2]", 2e-3, 128.0, 100.0, "M.a", start=6),
    ]
    table, sequence = group_launches(pd.DataFrame(rows, columns=LAUNCH_COLUMNS))
    # first-launch order; the same mm in two modules (two layers) is two rows, not one under "M"
    assert list(table["module"]) == ["M.a", "M.b", "M.c", "", "M.a"]
    assert list(table["shapes"]) == ["[4, 8] x [8, 2]", "[4]", "[4, 8] x [8, 2]", "[4]", "[2, 8] x [8, 2]"]
    assert sequence == [0, 1, 2, 3, 3, 4, 0]
    mm = table.iloc[0]
    assert mm["calls"] == 2
    assert mm["time_s"] == pytest.approx(3e-3)  # 1e-3 + 2e-3
    assert (mm["flops"], mm["bytes"]) == (256.0, 200.0)  # summed over the two calls
    flip = table.iloc[3]
    assert flip["calls"] == 2
    assert math.isnan(flip["flops"]) and math.isnan(flip["bytes"])  # unknown stays unknown, not 0
    assert flip["cost_source"] == "none"
    assert "start_ns" not in table.columns


def test_group_launches_empty():
    table, sequence = group_launches(pd.DataFrame([], columns=LAUNCH_COLUMNS))
    assert table.empty and "calls" in table.columns and sequence == []


def test_group_real_run(mlp_run):
    _, attributed = mlp_run
    table, sequence = group_launches(attributed.launches)
    assert table["calls"].sum() == len(attributed.launches) == len(sequence)
    assert table["time_s"].sum() == pytest.approx(attributed.launches["time_s"].sum())
    addmm = table[table["op"] == "aten::addmm"]
    assert len(addmm) == 2  # the two Linears differ in shapes: two rows


def test_optimizer_work_is_named_after_the_optimizer():
    model = torch.nn.Linear(16, 8)
    opt = torch.optim.AdamW(model.parameters(), foreach=False)
    model(torch.randn(4, 16)).sum().backward()
    with profiling("cpu") as cap:
        opt.step()
    launches = attribute(cap.trace, "cpu", cap.metadata).launches
    assert set(launches["module"]) == {"optimizer AdamW.step"}  # was '' (no nn.Module around it)
    assert {"aten::addcdiv_", "aten::lerp_"} <= set(launches["op"])
