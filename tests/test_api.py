"""The Python API on CPU: profile a callable, then table, chart and advice from the object."""

from __future__ import annotations

import matplotlib.figure
import torch

import rooflinectl
from rooflinectl.schema import KERNEL_COLUMNS


def test_profile_callable_plot_and_advise(tmp_path) -> None:
    a, b = torch.randn(128, 256), torch.randn(256, 64)

    def step(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.relu(x @ y)

    prof = rooflinectl.profile(step, a, b, warmup=1, iters=3, device="cpu")
    assert list(prof.kernels.columns) == list(KERNEL_COLUMNS)
    mm = prof.kernels[prof.kernels["op"] == "aten::mm"].iloc[0]
    assert mm["calls"] == 3
    assert mm["flops"] == 3 * 2 * 128 * 64 * 256  # iters x 2*M*N*K
    assert prof.summary["iterations"] == 3
    assert isinstance(prof.plot(), matplotlib.figure.Figure)
    report = prof.advise()
    assert isinstance(report.findings, list)
    path = tmp_path / "api.profile.json"
    prof.save(str(path))
    again = rooflinectl.load(str(path))
    assert again.kernels["flops"].sum() == prof.kernels["flops"].sum()


def test_capture_round_trips_through_a_gzipped_file(tmp_path) -> None:
    from rooflinectl.capture.session import load_capture, profiling, save_capture

    with profiling("cpu") as capture:
        torch.randn(8, 8) @ torch.randn(8, 8)
    path = tmp_path / "c.capture.json.gz"
    save_capture(capture, str(path))
    again = load_capture(str(path))
    assert [o.name for o in again.trace.ops] == [o.name for o in capture.trace.ops]
    assert again.metadata["device_kind"] == "cpu"
