"""GPU tests (the H200 machine) of issue 29: the L2 roof is measured and holds cache-resident work,
and the compute roof (the clock-scaled spec peak) bounds GEMMs a few probe shapes do not.

No timed thresholds of our own: each check compares a kernel with the roof the tool holds it to,
the very claim a roofline makes (no point above its roof).
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.gpu

MIB = 1 << 20


@pytest.fixture(scope="module")
def measured():
    """Spec ceilings of this GPU with its DRAM and L2 roofs measured now (not from a cache)."""
    from rooflinectl.ceilings.build import apply_measurements, gpu_spec_ceilings
    from rooflinectl.ceilings.detect import detect_gpu
    from rooflinectl.ceilings.measure_gpu import measure_dram, measure_l2, measure_launch

    info = detect_gpu()
    measurements = measure_dram(info) + measure_l2(info) + measure_launch(info)
    return apply_measurements(gpu_spec_ceilings(info), measurements), {m.key: m for m in measurements}


def test_the_l2_roof_is_measured_above_the_dram_roof(measured):
    ceilings, by_key = measured
    l2 = by_key["l2.read"]
    assert l2.value is not None, l2
    assert ceilings.memory_bytes_per_s["l2"].source == "measured"
    assert l2.value > ceilings.dram().value, (l2, ceilings.dram())
    assert ceilings.cache_bytes() and ceilings.cache_bytes() >= 16 * MIB


def _profile_copies(ceilings, nbytes: int, iters: int = 20):
    """A loop of copies between two fp32 buffers of nbytes each, profiled against `ceilings`."""
    import torch

    from rooflinectl.capture.run.runner import profile_calls
    from rooflinectl.pipeline import profile_data

    x = torch.rand(nbytes // 4, device="cuda")
    y = torch.empty_like(x)

    def step() -> None:
        y.copy_(x)

    capture = profile_calls(step, (), {}, warmup=3, iters=iters, device_kind="cuda")
    table = profile_data(capture, command=["test"], completed=True, exit_code=0, ceilings=ceilings).kernels
    copies = table[table["op"].str.contains("copy")]
    assert len(copies) == 1, table[["kernel", "op", "shapes"]]
    return copies.iloc[0]


def test_a_copy_loop_that_fits_l2_is_held_to_the_l2_roof_and_stays_under_it(measured):
    ceilings, _ = measured
    row = _profile_copies(ceilings, 8 * MIB)  # 16 MB moved per call, in a 60 MB L2
    assert row["memory_level"] == "l2", row
    assert row["efficiency"] <= 1.03, row


def test_a_copy_loop_larger_than_l2_stays_on_dram(measured):
    ceilings, _ = measured
    row = _profile_copies(ceilings, 512 * MIB, iters=5)
    assert row["memory_level"] == "dram", row
    assert row["efficiency"] <= 1.03, row


def test_the_clock_scaled_peak_bounds_an_lm_head_weight_gradient_gemm():
    """The GEMM of the issue: [4096, 32000] x [32000, 1024] in bf16 (an NT-layout weight gradient)
    ran at 109% of the measured bf16 roof; against the clock-scaled spec peak it must sit under 1."""
    import torch

    from rooflinectl.ceilings import current_ceilings
    from rooflinectl.ceilings.detect import nvml_snapshot
    from rooflinectl.ceilings.measure_gpu import time_cuda

    ceilings = current_ceilings("cuda", use_measured=False)
    roof = ceilings.compute_roof("tensor", "bf16")
    assert roof is not None and roof.source == "spec-clock-scaled" and roof.clock_mhz, roof
    a = torch.randn(32000, 4096, device="cuda", dtype=torch.bfloat16).t()  # [4096, 32000], column-major
    b = torch.randn(32000, 1024, device="cuda", dtype=torch.bfloat16)
    t_s, _reps, clocks = time_cuda(lambda i: torch.mm(a, b), min_reps=10)
    achieved = 2 * 4096 * 32000 * 1024 / t_s
    clock_mhz = clocks.get("sm_clock_mhz") or nvml_snapshot().get("sm_clock_mhz") or roof.clock_mhz
    peak_at_clock = roof.value * min(float(clock_mhz), roof.clock_mhz) / roof.clock_mhz
    assert achieved <= roof.value, (achieved, roof)
    assert achieved <= 1.03 * peak_at_clock, (achieved, peak_at_clock, clocks)
