"""Detection fallbacks, spec ceilings, measured overrides, flags and ridge arithmetic, on CPU."""

from __future__ import annotations

import pytest

from rooflinectl.ceilings.build import apply_measurements, assess, gpu_spec_ceilings, ridge_points
from rooflinectl.ceilings.detect import decode_throttle_reasons, merge_gpu_info
from rooflinectl.ceilings.measurement import Measurement, run_steps
from rooflinectl.ceilings.model import Ceilings, Roof

H200_TORCH = {  # what torch 2.11 + CUDA 13 reported on the H200 (../shared/H200.md)
    "name": "NVIDIA H200", "compute_capability": (9, 0), "sms": 132, "l2_bytes": 60 * 2**20,
    "memory_bytes": 150_000_000_000, "max_sm_clock_hz": 1980e6, "max_mem_clock_hz": 3201e6,
    "bus_width_bits": 6016, "uuid": "GPU-0000",
}
H200_NVML = {
    "name": "NVIDIA H200", "compute_capability": (9, 0), "max_sm_clock_hz": 1980e6,
    "current_sm_clock_hz": 345e6, "max_mem_clock_hz": 3201e6, "bus_width_bits": 6016,
    "power_limit_w": 700.0, "throttle_reasons": ["gpu_idle"], "driver": "580.159.04",
    "fp32_cores": 16896, "uuid": "GPU-0000",
}


def test_merge_prefers_torch_and_fills_from_nvml() -> None:
    info = merge_gpu_info(0, H200_TORCH, None, H200_NVML, None)
    assert info.sms == 132 and info.sources["sms"] == "torch"
    assert info.power_limit_w == 700.0 and info.sources["power_limit_w"] == "nvml"
    assert info.dram_bytes_per_s_from_clocks() == pytest.approx(4.815e12, rel=1e-3)
    assert info.missing == [], info.missing


def test_cuda13_zero_clocks_fall_back_to_nvml() -> None:
    torch_fields = {**H200_TORCH, "max_sm_clock_hz": None, "max_mem_clock_hz": None,
                    "bus_width_bits": None, "sms": None}
    info = merge_gpu_info(0, torch_fields, None, H200_NVML, None)
    assert info.max_sm_clock_hz == 1980e6 and info.sources["max_sm_clock_hz"] == "nvml"
    assert info.bus_width_bits == 6016 and info.sources["bus_width_bits"] == "nvml"
    assert info.sms == 132, "SMs from NVML's core count / 128 on sm_90"


def test_without_nvml_it_answers_and_says_what_it_could_not_read() -> None:
    info = merge_gpu_info(0, H200_TORCH, None, {}, "NVML unavailable (ImportError: pynvml)")
    c = gpu_spec_ceilings(info)
    text = " ".join(c.details["missing"])
    assert "NVML unavailable" in text and "power limit" in text and "throttle" in text, text
    assert c.compute_flops_per_s["tensor.bf16"].source == "spec-clock-scaled"  # torch had the clock
    assert c.dram().value == pytest.approx(4.8e12)


def test_h200_spec_roofs_are_clock_scaled() -> None:
    c = gpu_spec_ceilings(merge_gpu_info(0, H200_TORCH, None, H200_NVML, None))
    assert c.compute_flops_per_s["tensor.bf16"].value == pytest.approx(132 * 4096 * 1980e6)
    assert c.compute_flops_per_s["simt.fp32"].value == pytest.approx(132 * 256 * 1980e6)
    assert "tensor.fp4" not in c.compute_flops_per_s
    assert c.details["spec_entry"] == "H200 SXM"
    assert c.compute_flops_per_s["tensor.bf16"].clock_mhz == 1980.0  # the clock the value was scaled to


def test_no_clock_anywhere_uses_the_datasheet() -> None:
    torch_fields = {**H200_TORCH, "max_sm_clock_hz": None}
    c = gpu_spec_ceilings(merge_gpu_info(0, torch_fields, None, {}, "NVML unavailable"))
    bf16 = c.compute_flops_per_s["tensor.bf16"]
    assert (bf16.value, bf16.source) == (pytest.approx(989.5e12), "spec")
    assert bf16.clock_mhz is None  # a datasheet figure does not say its clock: it never scales


def test_measured_compute_roofs_keep_the_clock_nvml_read_while_they_ran() -> None:
    c = gpu_spec_ceilings(merge_gpu_info(0, H200_TORCH, None, H200_NVML, None))
    busy = {"sm_clock_mhz": 1755, "throttle_reasons": ["sw_power_cap"]}
    idle = {"sm_clock_mhz": 345, "throttle_reasons": ["gpu_idle"]}
    apply_measurements(c, [Measurement("tensor.bf16", 768e12, "flop/s", "cuBLAS", clocks=busy),
                           Measurement("tensor.fp16", 748e12, "flop/s", "cuBLAS", clocks=idle),
                           Measurement("simt.fp32", 60e12, "flop/s", "Triton")])
    assert c.achievable_flops_per_s["tensor.bf16"].clock_mhz == 1755.0
    assert c.achievable_flops_per_s["tensor.fp16"].clock_mhz is None  # read while idle: not the work's clock
    assert c.achievable_flops_per_s["simt.fp32"].clock_mhz is None  # NVML read nothing
    assert Ceilings.from_dict(c.to_dict()).achievable_flops_per_s["tensor.bf16"].clock_mhz == 1755.0
    assert c.compute_flops_per_s["tensor.bf16"].clock_mhz == 1980.0  # the roof: the spec at the max clock


def test_unknown_gpu_gets_labelled_estimates_from_its_compute_capability() -> None:
    fields = {**H200_TORCH, "name": "NVIDIA Hopper Prototype X"}
    c = gpu_spec_ceilings(merge_gpu_info(0, fields, None, {}, "NVML unavailable"))
    assert c.compute_flops_per_s["tensor.bf16"].source == "estimate"
    assert c.dram().source == "estimate" and c.dram().value == pytest.approx(4.815e12, rel=1e-3)
    assert any("not in the spec table" in m for m in c.details["missing"])


def test_unknown_gpu_with_nothing_readable_still_answers() -> None:
    c = gpu_spec_ceilings(merge_gpu_info(0, {"name": "Mystery"}, None, {}, "NVML unavailable"))
    assert c.compute_flops_per_s == {}
    assert c.dram().source == "estimate"
    assert any("placeholder" in m for m in c.details["missing"])


def test_decode_throttle_reasons() -> None:
    assert decode_throttle_reasons(0) == []
    assert decode_throttle_reasons(0x1) == ["gpu_idle"]
    assert decode_throttle_reasons(0x4 | 0x40) == ["sw_power_cap", "hw_thermal_slowdown"]
    assert decode_throttle_reasons(0x10000) == ["unknown_0x10000"]


@pytest.mark.parametrize("value,expected_flag", [
    (100.0, ""), (104.0, ""), (106.0, "above"), (31.0, ""), (29.0, "not used as a roof"),
])
def test_assess_flags_above_105_and_below_30_percent(value: float, expected_flag: str) -> None:
    ratio, flag = assess(value, {"value": 100.0, "source": "spec-clock-scaled"})
    assert ratio == pytest.approx(value / 100.0)
    assert (expected_flag in flag) if expected_flag else flag == "", flag


def test_assess_never_flags_against_an_estimate() -> None:
    assert assess(1.0, {"value": 100.0, "source": "estimate"}) == (None, "")


def _h200() -> Ceilings:
    return gpu_spec_ceilings(merge_gpu_info(0, H200_TORCH, None, H200_NVML, None))


def test_measurements_replace_spec_roofs_but_a_flagged_low_one_does_not() -> None:
    clocks = {"sm_clock_mhz": 1530, "throttle_reasons": ["sw_power_cap"]}
    c = apply_measurements(_h200(), [
        Measurement("dram.read", 4.28e12, "bytes/s", "sum"),
        Measurement("dram.write", 4.60e12, "bytes/s", "fill"),
        Measurement("tensor.bf16", 768e12, "flop/s", "mm"),
        Measurement("tensor.int8", 125e12, "flop/s", "int_mm", clocks=clocks),
        Measurement("launch.empty_kernel", 1.5e-6, "s", "profiler"),
        Measurement("tensor.fp8", None, "flop/s", note="not measured: no fp8 here"),
    ], measured_at="2026-11-29")
    assert c.dram() == Roof(4.60e12, "measured", "best of measured: dram.write")
    assert c.compute_flops_per_s["tensor.bf16"].source == "spec-clock-scaled"  # the roof stays the ceiling
    assert c.achievable_flops_per_s["tensor.bf16"] == Roof(768e12, "measured", "mm")  # the measured line beside it
    assert c.compute_flops_per_s["tensor.int8"].source == "spec-clock-scaled"
    assert "tensor.int8" not in c.achievable_flops_per_s  # flagged low: a slow path, not even achievable
    assert c.compute_flops_per_s["tensor.fp8"].source == "spec-clock-scaled"
    assert c.kernel_floor_s == Roof(1.5e-6, "measured", "profiler")
    rows = {r["key"]: r for r in c.details["measurements"]}
    assert "1530 MHz" in rows["tensor.int8"]["flag"] and "sw_power_cap" in rows["tensor.int8"]["flag"]
    assert rows["dram.write"]["used_as_roof"] and not rows["dram.read"]["used_as_roof"]
    assert not rows["tensor.bf16"]["used_as_roof"]
    assert Ceilings.from_dict(c.to_dict()) == c


def test_a_measured_peak_is_the_roof_only_where_it_beats_the_spec_at_one_clock() -> None:
    """The roof is a ceiling: a measurement above the clock-scaled spec (compared at one clock)
    replaces it, one under it does not; a device without a spec roof takes the measured one."""
    c = apply_measurements(_h200(), [
        Measurement("tensor.bf16", 1000e12, "flop/s", "mm", clocks={"sm_clock_mhz": 1800}),  # 1100 at 1980 MHz
        Measurement("tensor.fp16", 1000e12, "flop/s", "mm", clocks={"sm_clock_mhz": 1980}),  # 1000 < 1070
    ])
    assert c.compute_flops_per_s["tensor.bf16"].source == "measured"
    assert c.compute_flops_per_s["tensor.fp16"].source == "spec-clock-scaled"
    cpu = Ceilings("cpu", "cpu", {"dram": Roof(20e9, "estimate")}, {"simt.fp32": Roof(4e12, "estimate", "a guess")})
    apply_measurements(cpu, [Measurement("simt.fp32", 1e12, "flop/s", "mm")])  # under the CPU's guess: no spec
    assert cpu.compute_flops_per_s["simt.fp32"] == cpu.achievable_flops_per_s["simt.fp32"]
    assert cpu.compute_flops_per_s["simt.fp32"].value == 1e12


def test_ridge_points_arithmetic() -> None:
    c = Ceilings("x", "cpu", memory_bytes_per_s={"dram": Roof(100e9, "measured"), "l2": Roof(400e9, "measured")},
                 compute_flops_per_s={"simt.fp32": Roof(1e12, "measured"), "simt.fp64": Roof(0.5e12, "measured")})
    points = {(p["compute"], p["memory"]): p["intensity_flop_per_byte"] for p in ridge_points(c)}
    assert points == {("simt.fp32", "dram"): pytest.approx(10.0), ("simt.fp32", "l2"): pytest.approx(2.5),
                      ("simt.fp64", "dram"): pytest.approx(5.0), ("simt.fp64", "l2"): pytest.approx(1.25)}


def test_h200_bf16_ridge_against_datasheet_dram() -> None:
    points = {(p["compute"], p["memory"]): p["intensity_flop_per_byte"] for p in ridge_points(_h200())}
    assert points[("tensor.bf16", "dram")] == pytest.approx(132 * 4096 * 1.98e9 / 4.8e12)  # ~223


def test_run_steps_records_failures_and_budget_overruns() -> None:
    seen: list[tuple[str, int, int]] = []

    def boom() -> list[Measurement]:
        raise RuntimeError("CUDA out of memory\nmore text")

    out = run_steps([("ok", lambda: [Measurement("simt.fp32", 1.0, "flop/s")]), ("bad", boom)],
                    budget_s=10, progress=lambda *a: seen.append(a))
    assert [m.key for m in out] == ["simt.fp32", "bad"]
    assert out[1].value is None and out[1].note.removeprefix("failed: ") == "RuntimeError: CUDA out of memory"
    assert seen[-1] == ("done", 2, 2)
    skipped = run_steps([("late", lambda: [])], budget_s=-1)
    assert skipped[0].value is None and "budget" in skipped[0].note
