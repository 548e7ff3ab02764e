"""advise on clocks: clocks.throttled when a power or thermal cap cost time, gpu.shared when
another process used the GPU. Recorded H200 capture, synthetic samples laid over it: 1980 MHz,
then 1485 MHz from the sample at 902 ms (so from 901.5 ms) with the reason under test."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from nvml_samples import (
    HW_POWER_BRAKE,
    HW_SLOWDOWN,
    HW_THERMAL,
    SW_POWER_CAP,
    SW_THERMAL,
    SYNC_BOOST,
    steady_then_capped,
)

from rooflinectl.analysis.advice import Thresholds, advise
from rooflinectl.attribution.join import attribute
from rooflinectl.capture.run.session import load_capture
from rooflinectl.ceilings.model import Ceilings, Roof
from rooflinectl.pipeline import profile_data

DATA = Path(__file__).parent / "data"
MS = 1_000_000
BOUNDARY_NS = 901.5 * MS
H200 = Ceilings("NVIDIA H200", "cuda", {"dram": Roof(4.8e12, "spec")},
                {"tensor.bf16": Roof(132 * 4096 * 1980e6, "spec-clock-scaled", clock_mhz=1980.0),
                 "simt.fp32": Roof(132 * 256 * 1980e6, "spec-clock-scaled", clock_mhz=1980.0)},
                Roof(2e-6, "estimate"))
ONLY = ("clocks.throttled", "gpu.shared")


def _profile(reason: int = SW_POWER_CAP, cap_from_ns: int = 902 * MS, processes=None, period_ns: int = MS):
    capture = load_capture(str(DATA / "h200_mlp_bf16.capture.json.gz"))
    nvml = steady_then_capped(0, 910 * MS, cap_from_ns, reason=reason, period_ns=period_ns)
    if processes is not None:
        nvml["devices"][0]["processes"] = processes
    capture.metadata["nvml"] = nvml
    return capture, profile_data(capture, command=["t"], completed=True, ceilings=H200)


def _advise(data):
    return advise(data, Thresholds(disabled_rules=tuple(r for r in __import__(
        "rooflinectl.analysis.advice", fromlist=["RULES"]).RULES if r not in ONLY)))


def test_a_power_cap_costs_compute_bound_kernels_their_lost_clock():
    capture, data = _profile()
    report = _advise(data)
    [finding] = report.findings_of("clocks.throttled")
    assert finding.severity == "warning"
    # by hand: each launch's time after 901.5 ms ran at 1485 MHz; a compute-bound one loses
    # that time x (1 - its mean clock / 1980)
    launches = attribute(capture.trace, "cuda", capture.metadata).launches
    keys = ["kernel", "op", "shapes", "dtype", "module"]  # attribution.group.GROUP_KEY
    bound = data.kernels.set_index(keys)["bound"]
    start, end = launches["start_ns"].to_numpy(float), launches["end_ns"].to_numpy(float)
    after = np.clip(end - np.maximum(start, BOUNDARY_NS), 0, None)
    duration = end - start
    clock = np.where(duration > 0, ((duration - after) * 1980 + after * 1485) / np.maximum(duration, 1), 1980)
    compute = np.array([bound[tuple(r)] == "compute" for r in launches[keys].itertuples(index=False)])
    expected_s = float((after * (1 - clock / 1980))[compute].sum()) / 1e9
    assert expected_s > 0
    assert finding.est_saving_s == pytest.approx(expected_s)
    assert "sw_power_cap" in finding.evidence and "power limit" in finding.recommendation
    assert set(finding.rows) == {i for i, b in enumerate(data.kernels["bound"]) if b == "compute"
                                 and data.kernels.at[i, "sm_clock_mhz"] < 1980}


@pytest.mark.parametrize(("bit", "name", "thermal"), [
    (SW_POWER_CAP, "sw_power_cap", False), (HW_SLOWDOWN, "hw_slowdown", False),
    (SW_THERMAL, "sw_thermal_slowdown", True), (HW_THERMAL, "hw_thermal_slowdown", True),
    (HW_POWER_BRAKE, "hw_power_brake_slowdown", False),
])
def test_each_power_or_thermal_reason_gives_the_finding(bit, name, thermal):
    _, data = _profile(reason=bit)
    [finding] = _advise(data).findings_of("clocks.throttled")
    assert name in finding.evidence
    assert ("cooling" in finding.recommendation) is thermal


def test_sync_boost_is_a_setting_not_a_cap():
    _, data = _profile(reason=SYNC_BOOST)
    assert data.summary["clocks"]["throttle_kernel_s"]["sync_boost"] > 0
    assert _advise(data).findings_of("clocks.throttled") == []


def test_a_cap_on_under_5_percent_of_kernel_time_is_not_advised():
    _, data = _profile(cap_from_ns=907_700_000, period_ns=100_000)  # the last launches of the region
    clocks = data.summary["clocks"]
    assert 0 < clocks["capped_kernel_s"] / clocks["kernel_time_s"] < 0.05
    assert _advise(data).findings_of("clocks.throttled") == []


def test_a_shared_gpu_is_a_warning_that_saves_nothing():
    _, data = _profile(processes=[[0, [[1000, 5 << 30], [2000, 3 << 30]]]])  # we are pid 1000
    [finding] = _advise(data).findings_of("gpu.shared")
    assert finding.severity == "warning"  # not downgraded to info for its zero saving
    assert finding.est_saving_s == 0.0
    assert "1 other process(es)" in finding.evidence and "3.22 GB" in finding.evidence


def test_alone_on_the_gpu_and_without_nvml_nothing_is_said():
    _, data = _profile(processes=[[0, [[1000, 5 << 30]]]])
    assert _advise(data).findings_of("gpu.shared") == []
    data.summary["clocks"] = {"status": "unavailable", "message": "NVML unavailable"}
    assert _advise(data).findings == []
