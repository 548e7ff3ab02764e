"""Joining Nsight Compute's launches to the profiler's, on the recorded H200 pair: the ncu CSV
and the torch.profiler trace of two runs of the same command (same kernels, same order)."""

from __future__ import annotations

import math

import pytest
from counters_data import H200, NCU_ROWS, REGION_LAUNCHES, ncu_text, recorded_profile

from rooflinectl.analysis.counters import measured_view
from rooflinectl.attribution.counters import join_measurements, launch_keys
from rooflinectl.capture.ncu.csv_parse import measured_launches
from rooflinectl.capture.ncu.metrics import MeasuredLaunch
from rooflinectl.capture.ncu.sampling import plan_numbers
from rooflinectl.errors import CountersProblem
from rooflinectl.pipeline import add_counters


@pytest.fixture(scope="module")
def pair():
    capture, data, launches = recorded_profile()
    keys = launch_keys(launches, capture.trace)
    region = measured_launches(ncu_text())[NCU_ROWS - REGION_LAUNCHES:]
    return data, keys, region


def select_like_ncu(measured: list[MeasuredLaunch], numbers: list[int]) -> list[MeasuredLaunch]:
    """What ncu's --kernel-id :::N measures: the N'th launch of each (name, grid, block), counted
    here on ncu's own rows (not on the profiler's), so the join is checked against an independent
    selection."""
    seen: dict[tuple, int] = {}
    out = []
    for m in measured:
        key = (m.name, m.grid, m.block)
        seen[key] = seen.get(key, 0) + 1
        if seen[key] in numbers:
            out.append(m)
    return out


def test_region_launches_are_the_kernels_of_the_counted_step(pair):
    _data, keys, region = pair
    assert len(keys) == REGION_LAUNCHES  # memcpy/memset of the region are left out: ncu does not replay them
    assert region[0].name == keys[0].name == "nvjet_sm90_tst_128x64_64x8_1x2_h_bz_bias_TNT"


def test_every_launch_measured_joins_one_to_one(pair):
    data, keys, region = pair
    join = join_measurements(keys, region, None)
    assert join.rule == "every launch" and join.unmatched == 0
    assert [p for p, _ in join.pairs] == list(range(REGION_LAUNCHES))
    profiled = add_counters(data, keys, join, {"tool": "ncu"})
    table = profiled.kernels
    assert int(table["measured_launches"].sum()) == REGION_LAUNCHES
    # the first Linear's forward GEMM: 2 calls of [256,1024] x [1024,4096]; the tensor cores did
    # 2*M*N*K each, plus the bias add of the epilogue on CUDA cores (256*4096 FADD, as ncu printed)
    row = table[(table["op"] == "aten::addmm") & table["shapes"].str.startswith("[4096] x [256, 1024]")].iloc[0]
    assert row["measured_precision"] == "tensor.bf16"
    assert row["measured_flops"] == pytest.approx(2 * (2 * 256 * 1024 * 4096 + 256 * 4096))
    assert row["flops"] == 2 * (2 * 256 * 1024 * 4096)  # the analytic estimate stays beside it
    assert row["cost_source"] == "analytic"
    summary = profiled.summary["counters"]
    assert summary["launches_measured"] == REGION_LAUNCHES and summary["status"] == "measured"


def test_one_sampled_launch_per_group_gives_the_groups_their_counters(pair):
    data, keys, region = pair
    numbers = plan_numbers(keys, [True] * len(keys), 1)
    sampled = select_like_ncu(region, numbers)
    assert len(sampled) < len(region)
    join = join_measurements(keys, sampled, numbers)
    assert join.rule == "config" and len(join.pairs) == len(sampled)
    full = add_counters(data, keys, join_measurements(keys, region, None), {}).kernels
    table = add_counters(data, keys, join, {}).kernels
    measured = table["measured_launches"] > 0
    kernel_rows = ~table["kernel"].str.startswith(("Memcpy", "Memset"))
    assert (measured == kernel_rows).all()  # every kernel group measured, though fewer launches were
    gemms = table["op_family"].eq("gemm") & measured
    # a GEMM repeats the same tensor-core work: one launch x calls equals all launches measured
    assert table.loc[gemms, "measured_flops"].to_numpy() == pytest.approx(full.loc[gemms, "measured_flops"].to_numpy(), rel=1e-6)


def test_padded_gemm_shows_more_executed_than_useful_flops(pair):
    data, keys, region = pair
    table = add_counters(data, keys, join_measurements(keys, region, None), {}).kernels
    # [256, 4096] x [4096, 1024] runs 48-row tiles: ceil(256/48) = 6 tiles of 48 = 288 rows of work
    row = table[(table["op"] == "aten::addmm") & table["shapes"].str.startswith("[1024] x [256, 4096]")].iloc[0]
    executed_tensor = row["measured_flops"] - 2 * 256 * 1024  # less the epilogue's bias add
    assert executed_tensor / row["flops"] == pytest.approx(288 / 256, rel=1e-3)


def test_a_stopped_run_joins_as_a_prefix(pair):
    _data, keys, region = pair
    join = join_measurements(keys, region[:10], None)
    assert len(join.pairs) == 10 and "stopped after 10" in join.notes[0]


def test_an_unpredicted_selection_is_aligned_by_kernel_and_config(pair):
    _data, keys, region = pair
    every_third = region[::3]
    join = join_measurements(keys, every_third, [1])
    assert join.rule == "aligned" and join.unmatched == 0
    assert all(keys[p].name == m.name or keys[p].grid == m.grid for p, m in join.pairs)


def test_other_kernels_are_refused_with_the_cause(pair):
    _data, keys, region = pair
    with pytest.raises(CountersProblem, match="do not line up"):
        join_measurements(keys, region[::-1], None)
    with pytest.raises(CountersProblem):
        join_measurements(keys, [], None)


def test_unknown_cost_rows_take_the_measured_cost(pair):
    data, keys, region = pair
    hidden = data.kernels.copy()
    gelu = hidden.index[hidden["op"] == "aten::gelu"][0]
    hidden.loc[gelu, ["flops", "bytes"]] = math.nan
    hidden.loc[gelu, "cost_source"] = "none"
    data = type(data)(kernels=hidden, ceilings=data.ceilings, metadata=data.metadata, summary=dict(data.summary))
    table = add_counters(data, keys, join_measurements(keys, region, None), {}).kernels
    row = table.loc[gelu]
    assert row["cost_source"] == "ncu" and row["flops"] == row["measured_flops"] > 0
    assert row["bytes"] == row["dram_bytes"] and row["bound"] in ("memory", "compute", "latency")
    assert (row["unit"], row["precision"]) == ("simt", "fp32")


def test_measured_view_places_rows_by_what_ran(pair):
    data, keys, region = pair
    table = add_counters(data, keys, join_measurements(keys, region, None), {}).kernels
    view = measured_view(table, H200)
    assert len(view) == int((table["measured_launches"] > 0).sum())
    mm = view[view["measured_precision"] == "tensor.bf16"]
    assert (mm["precision"] == "bf16").all() and (mm["unit"] == "tensor").all()
    assert (view["flops"] == view["measured_flops"]).all()


# A script without region: ncu's window is the whole script, setup launches included, while the
# kernel table holds only the steady state. The recorded pair again, its steps marked.

@pytest.fixture(scope="module")
def whole_script():
    capture, data, launches = recorded_profile(steps_marked=True)
    return data, launch_keys(launches, capture.trace), measured_launches(ncu_text())


def test_setup_launches_keep_their_place_in_the_window(whole_script, pair):
    data, keys, every = whole_script
    region_data, region_keys, _ = pair
    assert data.summary["iterations_method"] == "profiler_step" and data.summary["setup_launches"] > 0
    assert len(keys) == len(every) == NCU_ROWS  # every kernel launch ncu saw in the whole script
    assert [k.group >= 0 for k in keys] == [False] * (NCU_ROWS - REGION_LAUNCHES) + [True] * REGION_LAUNCHES
    # the steady table is the region's table: same rows, same order
    assert data.kernels[["kernel", "op", "shapes", "calls"]].equals(region_data.kernels[["kernel", "op", "shapes", "calls"]])


def test_whole_script_measurements_land_on_the_steady_rows_only(whole_script, pair):
    data, keys, every = whole_script
    region_data, region_keys, region = pair
    join = join_measurements(keys, every, None)
    assert join.rule == "every launch" and len(join.pairs) == NCU_ROWS
    table = add_counters(data, keys, join, {}).kernels
    # the independent expectation: the region run's join of ncu's last 43 rows
    expected = add_counters(region_data, region_keys, join_measurements(region_keys, region, None), {}).kernels
    for column in ("measured_flops", "dram_bytes", "l2_bytes", "l1_bytes", "measured_launches"):
        assert table[column].to_numpy() == pytest.approx(expected[column].to_numpy(), nan_ok=True), column
    summary = add_counters(data, keys, join, {}).summary["counters"]
    assert (summary["launches_counted"], summary["launches_measured"]) == (REGION_LAUNCHES, REGION_LAUNCHES)
    assert summary["setup_launches_measured"] == NCU_ROWS - REGION_LAUNCHES
    assert summary["launches_in_window"] == NCU_ROWS


def test_sampling_a_whole_script_plans_steady_launches_and_drops_setup_ones(whole_script, pair):
    data, keys, every = whole_script
    numbers = plan_numbers(keys, [True] * len(keys), 1)
    sampled = select_like_ncu(every, numbers)  # ncu numbers setup launches too: some are measured
    join = join_measurements(keys, sampled, numbers)
    assert join.rule == "config" and len(join.pairs) == len(sampled)
    assert any(keys[p].group < 0 for p, _ in join.pairs)
    profiled = add_counters(data, keys, join, {})
    table = profiled.kernels
    kernel_rows = ~table["kernel"].str.startswith(("Memcpy", "Memset"))
    assert ((table["measured_launches"] > 0) == kernel_rows).all()
    assert int(table["measured_launches"].sum()) == profiled.summary["counters"]["launches_measured"]
    # one steady launch x calls equals the region's every-launch measurement on the GEMMs
    region_data, region_keys, region = pair
    full = add_counters(region_data, region_keys, join_measurements(region_keys, region, None), {}).kernels
    gemms = table["op_family"].eq("gemm") & kernel_rows
    assert table.loc[gemms, "measured_flops"].to_numpy() == pytest.approx(full.loc[gemms, "measured_flops"].to_numpy(), rel=1e-6)
