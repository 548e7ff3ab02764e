"""Clocks from NVML samples laid over the kernel timeline, and compute roofs that follow them.

Hand values throughout: samples every 20 ms stand for the time halfway to their neighbours
(never more than 1.5 periods away); idle-flagged samples say nothing of the clock kernels get.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from nvml_samples import (
    HW_POWER_BRAKE,
    HW_SLOWDOWN,
    HW_THERMAL,
    IDLE,
    SW_POWER_CAP,
    SW_THERMAL,
    SYNC_BOOST,
    nvml_metadata,
    steady_then_capped,
)

from rooflinectl.aggregate import aggregate
from rooflinectl.analysis.clocks import (
    clock_summary,
    device_samples,
    launch_sm_clock_mhz,
    other_processes,
    roof_clock_shifts,
    throttle_kernel_time_s,
)
from rooflinectl.analysis.regroup import regroup
from rooflinectl.analysis.roofline import place_on_roofline
from rooflinectl.attribution.join import attribute
from rooflinectl.capture.run.session import load_capture
from rooflinectl.ceilings.model import Ceilings, Roof
from rooflinectl.pipeline import profile_data

MS = 1_000_000
DATA = __import__("pathlib").Path(__file__).parent / "data"


def _launches(spans_ms: list[tuple[float, float]]) -> pd.DataFrame:
    return pd.DataFrame({"start_ns": [int(a * MS) for a, _ in spans_ms], "end_ns": [int(b * MS) for _, b in spans_ms]})


# t, SM clock, power, reasons: full clock, then the power cap, then idle
ROWS = [(0, 1980, 520, 0), (20 * MS, 1980, 530, 0), (40 * MS, 1755, 699, SW_POWER_CAP),
        (60 * MS, 1755, 700, SW_POWER_CAP), (80 * MS, 345, 90, IDLE)]


def test_each_launch_gets_the_clock_of_the_samples_around_it():
    samples = device_samples({"nvml": nvml_metadata(ROWS)})
    launches = _launches([(5, 8), (25, 35), (45, 45), (80, 81), (85, 95), (200, 201)])
    clock = launch_sm_clock_mhz(launches, samples)
    assert clock[0] == 1980  # inside the first sample's span
    assert clock[1] == pytest.approx((5 * 1980 + 5 * 1755) / 10)  # half under each of two samples
    assert clock[2] == 1755  # an instant takes the sample around it
    assert clock[3] == 1755  # the idle sample at 80 ms is skipped: the 60 ms one reaches to 90 ms
    assert clock[4] == 1755  # only [85, 90] ms is covered: the mean over that part
    assert math.isnan(clock[5])  # no sample within 1.5 periods: no clock, the roofs stay as they are


def test_without_samples_no_launch_has_a_clock():
    assert np.isnan(launch_sm_clock_mhz(_launches([(0, 1)]), None)).all()
    assert device_samples({"nvml": {"status": "unavailable", "message": "x"}}) is None
    assert device_samples({}) is None


@pytest.mark.parametrize(("bit", "name"), [
    (SW_POWER_CAP, "sw_power_cap"), (HW_SLOWDOWN, "hw_slowdown"), (SYNC_BOOST, "sync_boost"),
    (SW_THERMAL, "sw_thermal_slowdown"), (HW_THERMAL, "hw_thermal_slowdown"),
    (HW_POWER_BRAKE, "hw_power_brake_slowdown"),
])
def test_kernel_time_under_each_throttle_reason(bit, name):
    """Samples at 0..100 ms; the reason is set at 40 and 60 ms, so it covers [30, 70] ms."""
    rows = [(t * MS, 1980 if t not in (40, 60) else 1500, 600, bit if t in (40, 60) else 0)
            for t in range(0, 101, 20)]
    samples = device_samples({"nvml": nvml_metadata(rows)})
    launches = _launches([(10, 20), (25, 35), (50, 52), (65, 75), (90, 95)])
    # under the reason: 5 ms of the second, all 2 ms of the third, 5 ms of the fourth
    assert throttle_kernel_time_s(launches, samples) == {name: pytest.approx(12e-3)}


def test_two_reasons_at_once_and_idle_never_counted():
    rows = [(0, 1400, 700, SW_POWER_CAP | SW_THERMAL), (20 * MS, 345, 80, IDLE)]
    samples = device_samples({"nvml": nvml_metadata(rows)})
    out = throttle_kernel_time_s(_launches([(0, 4), (20, 21)]), samples)
    assert out == {"sw_power_cap": pytest.approx(4e-3), "sw_thermal_slowdown": pytest.approx(4e-3)}


def test_clock_summary_while_kernels_ran():
    meta = {"nvml": nvml_metadata(ROWS)}
    launches = _launches([(5, 8), (25, 35), (45, 45)])
    out = clock_summary(launches, device_samples(meta), meta)
    # kernel-time-weighted: 3 ms at 1980, 10 ms at 1867.5; the instant weighs nothing
    assert out["sm_clock_mhz"]["mean"] == pytest.approx((3 * 1980 + 10 * 1867.5) / 13)
    assert (out["sm_clock_mhz"]["min"], out["sm_clock_mhz"]["max"]) == (1755, 1980)
    assert out["power_limit_w"] == 700.0 and out["max_sm_clock_mhz"] == 1980
    assert out["power_w"]["max"] == 700.0
    assert out["throttle_kernel_s"] == {"sw_power_cap": pytest.approx(5e-3)}
    assert out["kernel_time_s"] == pytest.approx(13e-3)


def test_clock_summary_says_why_there_is_none():
    meta = {"nvml": {"status": "unavailable", "message": "NVML unavailable (NVMLError_LibraryNotFound)"}}
    assert clock_summary(_launches([(0, 1)]), None, meta) == {"status": "unavailable", "message": meta["nvml"]["message"]}
    assert clock_summary(_launches([(0, 1)]), None, {}) is None  # CPU runs and older profiles


def test_other_processes_by_pid_and_in_a_container():
    device = {"processes": [[0, [[1000, 5 << 30], [2000, 3 << 30]]], [1, [[1000, 6 << 30]]]],
              "process_util_max_pct": [[1000, 99, 40], [2000, 35, 5]]}
    ours_listed = other_processes({"own_pid": 1000}, device)
    assert ours_listed == {"count": 1, "used_bytes": float(3 << 30), "sm_util_max_pct": 35.0}
    # in a container NVML lists host PIDs: ours is not among them, the biggest user is taken as us
    container = other_processes({"own_pid": 7}, {"processes": [[0, [[1000, 5 << 30], [2000, 3 << 30]]]]})
    assert container == {"count": 1, "used_bytes": float(3 << 30), "sm_util_max_pct": 0.0}
    alone = other_processes({"own_pid": 7}, {"processes": [[0, [[1000, 5 << 30]]]]})
    assert alone["count"] == 0


BW = 1e12


@pytest.fixture
def ceilings() -> Ceilings:
    return Ceilings(
        device_name="test", device_kind="cuda", memory_bytes_per_s={"dram": Roof(BW, "spec")},
        compute_flops_per_s={"tensor.bf16": Roof(1e15, "spec-clock-scaled", clock_mhz=2000.0),
                             "simt.fp32": Roof(1e13, "spec")},  # a datasheet figure: its clock unknown
        kernel_floor_s=Roof(2e-6, "estimate"))


def _table() -> pd.DataFrame:
    rows = [  # kernel, unit, precision, flops, bytes, time_s, sm_clock_mhz
        ("gemm", "tensor", "bf16", 1e12, 1e8, 2e-3, 1500.0),
        ("bf16_memory", "tensor", "bf16", 1e9, 1e9, 1e-3, 1800.0),
        ("fp32", "simt", "fp32", 1e10, 1e8, 2e-3, 1500.0),
        ("gemm_unsampled", "tensor", "bf16", 1e12, 1e8, 2e-3, math.nan),
    ]
    return pd.DataFrame([dict(kernel=k, unit=u, precision=p, flops=f, bytes=b, time_s=t, calls=1, sm_clock_mhz=c)
                         for k, u, p, f, b, t, c in rows])


def test_compute_roofs_follow_the_clock(ceilings):
    placed = place_on_roofline(_table(), ceilings).set_index("kernel")
    # 1e15 FLOP/s at 2000 MHz is 7.5e14 at 1500 MHz: 1e12 FLOP take 1.333 ms at the roof
    assert placed.at["gemm", "attainable_flops_per_s"] == pytest.approx(7.5e14)
    assert placed.at["gemm", "roof_time_s"] == pytest.approx(1e12 / 7.5e14)
    assert placed.at["gemm", "efficiency"] == pytest.approx((1e12 / 7.5e14) / 2e-3)
    assert placed.at["gemm_unsampled", "attainable_flops_per_s"] == pytest.approx(1e15)  # no clock: no move
    assert placed.at["fp32", "attainable_flops_per_s"] == pytest.approx(1e13)  # roof without a clock
    assert placed.at["bf16_memory", "attainable_flops_per_s"] == pytest.approx(1.0 * BW)  # memory roof stays


def test_roof_shifts_say_how_far_the_clock_moved_the_roofs(ceilings):
    placed = place_on_roofline(_table(), ceilings)
    shifts = roof_clock_shifts(placed, ceilings)
    assert [s["roof"] for s in shifts] == ["tensor.bf16"]  # simt.fp32 knows no clock
    bf16 = shifts[0]
    assert bf16["kernel_clock_mhz"] == pytest.approx((2e-3 * 1500 + 1e-3 * 1800) / 3e-3)
    assert bf16["peak_change"] == pytest.approx(1600 / 2000 - 1)
    # the GEMM's attainable moved to 0.75 of it, the memory-bound row's not at all
    assert bf16["attainable_change"] == pytest.approx((2 * 0.75 + 1 * 1.0) / 3 - 1)


def test_a_group_clock_is_the_time_weighted_mean_of_its_known_clocks():
    rows = pd.DataFrame({"op": ["mm", "mm", "mm", "add"], "time_s": [1.0, 3.0, 2.0, 1.0],
                         "sm_clock_mhz": [1980.0, 1500.0, math.nan, math.nan]})
    out = aggregate(rows, ["op"]).set_index("op")
    assert out.at["mm", "sm_clock_mhz"] == pytest.approx((1980 + 3 * 1500) / 4)
    assert math.isnan(out.at["add", "sm_clock_mhz"])


def test_h200_trace_with_a_power_cap_half_way():
    """The recorded H200 MLP capture (its counted region runs 897-908 ms) with samples every 1 ms
    laid over it: 1980 MHz, then 1485 MHz under the power cap from the sample at 902 ms, so from
    901.5 ms on. Each launch's clock by hand: the share of its interval on each side of 901.5 ms;
    a row's, the duration-weighted mean of its launches'; its roof, bf16 peak x clock / 1980."""
    capture = load_capture(str(DATA / "h200_mlp_bf16.capture.json.gz"))
    end_ns = max(k.end_ns for k in capture.trace.kernels)
    capture.metadata["nvml"] = steady_then_capped(0, end_ns, 902 * MS, period_ns=MS)
    bf16 = Roof(132 * 4096 * 1980e6, "spec-clock-scaled", clock_mhz=1980.0)
    ceilings = Ceilings("NVIDIA H200", "cuda", {"dram": Roof(4.8e12, "spec")},
                        {"tensor.bf16": bf16, "simt.fp32": Roof(132 * 256 * 1980e6, "spec-clock-scaled", clock_mhz=1980.0)},
                        Roof(2e-6, "estimate"))
    data = profile_data(capture, command=["test"], completed=True, ceilings=ceilings)

    launches = attribute(capture.trace, "cuda", capture.metadata).launches
    boundary = 901.5 * MS
    before = (np.minimum(launches["end_ns"], boundary) - launches["start_ns"]).clip(lower=0)
    duration = launches["end_ns"] - launches["start_ns"]
    launches["expected_mhz"] = np.where(duration > 0, (before * 1980 + (duration - before) * 1485) / duration,
                                        np.where(launches["start_ns"] < boundary, 1980, 1485))
    gemms = launches[launches["unit"] == "tensor"]
    assert (gemms["end_ns"] < boundary).any() and (gemms["start_ns"] > boundary).any()  # both sides
    expected = {key: np.average(g["expected_mhz"], weights=g["end_ns"] - g["start_ns"])
                for key, g in gemms.groupby(["kernel", "op", "shapes", "dtype", "module"])}
    rows = data.kernels.set_index(["kernel", "op", "shapes", "dtype", "module"])
    assert len(expected) >= 3
    for key, mhz in expected.items():
        row = rows.loc[key]
        assert row["sm_clock_mhz"] == pytest.approx(mhz)
        assert row["attainable_flops_per_s"] == pytest.approx(min(bf16.value * mhz / 1980, row["intensity"] * 4.8e12))
    clocks = data.summary["clocks"]
    assert clocks["status"] == "sampled"
    assert (clocks["sm_clock_mhz"]["min"], clocks["sm_clock_mhz"]["max"]) == (1485, 1980)
    after_s = float((launches["end_ns"] - np.maximum(launches["start_ns"], boundary)).clip(lower=0).sum()) / 1e9
    assert clocks["throttle_kernel_s"]["sw_power_cap"] == pytest.approx(after_s)
    shift = next(s for s in clocks["roof_shifts"] if s["roof"] == "tensor.bf16")
    mean_mhz = np.average(gemms["expected_mhz"], weights=gemms["end_ns"] - gemms["start_ns"])
    assert shift["kernel_clock_mhz"] == pytest.approx(mean_mhz)
    assert shift["peak_change"] == pytest.approx(mean_mhz / 1980 - 1)


def test_show_by_op_keeps_the_clock_and_its_roofs(ceilings):
    """Regrouping sums rows; the op's clock is their time-weighted one, and its roof follows it."""
    table = place_on_roofline(_table().assign(op=["aten::mm", "aten::add", "aten::mul", "aten::mm"],
                                              module="", op_family="gemm", shapes="", dtype="", device="cuda",
                                              origin="aten", cost_source="analytic", cost_note="", blocks=1.0,
                                              threads_per_block=1.0, rank=0), ceilings)
    by_op = regroup(table, "op", ceilings).set_index("op")
    # aten::mm: 2 ms at 1500 MHz and 2 ms unsampled: the clock is the sampled part's, 1500 MHz
    assert by_op.at["aten::mm", "sm_clock_mhz"] == pytest.approx(1500.0)
    assert by_op.at["aten::mm", "attainable_flops_per_s"] == pytest.approx(1e15 * 1500 / 2000)
