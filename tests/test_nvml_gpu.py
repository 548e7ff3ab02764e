"""NVML sampled during a real GPU run (the H200 test machine): samples lie on the trace's clock,
over the kernels, and every busy kernel group gets a clock between the idle and the max clock."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from rooflinectl.capture.run.runner import profile_calls  # noqa: E402
from rooflinectl.pipeline import profile_data  # noqa: E402

pytestmark = pytest.mark.gpu


def test_samples_cover_the_kernels_of_a_one_second_gemm_loop() -> None:
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)

    def step() -> None:
        for _ in range(20):
            a @ a

    capture = profile_calls(step, (), {}, warmup=2, iters=30, device_kind="cuda")
    nvml = capture.metadata["nvml"]
    assert nvml["status"] == "sampled" and nvml["aligned"], nvml.get("message")
    samples = nvml["devices"][0]["samples"]
    gemms = [k for k in capture.trace.kernels if k.dur_ns > 500_000]
    first, last = gemms[0].ts_ns, gemms[-1].end_ns
    period_ns = nvml["period_s"] * 1e9
    inside = [t for t in samples["t_ns"] if first <= t <= last]
    # about one sample per period over the GEMMs (the GIL may delay a few)
    assert 0.5 * (last - first) / period_ns <= len(inside) <= (last - first) / period_ns + 2
    busy = [r for t, r in zip(samples["t_ns"], samples["reasons"]) if first <= t <= last]
    assert all(r is not None and not r & 0x1 for r in busy), busy  # never "idle" while GEMMs run
    data = profile_data(capture, command=["test"], completed=True)
    rows = data.kernels[data.kernels["time_s"] > 0.5 * data.kernels["time_s"].sum()]
    max_mhz = nvml["devices"][0]["max_sm_clock_mhz"]
    assert ((rows["sm_clock_mhz"] > 345) & (rows["sm_clock_mhz"] <= max_mhz)).all(), rows["sm_clock_mhz"]
    clocks = data.summary["clocks"]
    assert clocks["power_w"]["max"] <= clocks["power_limit_w"] * 1.05
    print("NVML during a 1 s bf16 GEMM loop:", clocks["sm_clock_mhz"], clocks["power_w"], clocks["throttle_kernel_s"])
