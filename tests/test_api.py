"""The Python API on CPU: profile a callable, then table, chart and advice from the object."""

from __future__ import annotations

import torch

import rooflinectl
from rooflinectl.schema import KERNEL_COLUMNS


def test_profile_callable_plot_and_advise(tmp_path) -> None:
    a, b, bias, residual = torch.randn(128, 256), torch.randn(256, 512), torch.randn(512), torch.randn(128, 512)

    def step(x: torch.Tensor, y: torch.Tensor, bias: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(x @ y + bias) + residual

    prof = rooflinectl.profile(step, a, b, bias, residual, warmup=1, iters=3, device="cpu")
    assert list(prof.kernels.columns) == list(KERNEL_COLUMNS)
    mm = prof.kernels[prof.kernels["op"] == "aten::mm"].iloc[0]
    assert mm["calls"] == 3
    assert mm["flops"] == 3 * 2 * 128 * 512 * 256  # iters x 2*M*N*K
    assert prof.summary["iterations"] == 3
    fig = prof.plot()
    assert prof.data.ceilings.device_name in fig._suptitle.get_text()
    labels = [t.get_text() for ax in fig.axes for t in ax.texts if (t.get_gid() or "").startswith("label:")]
    assert len(labels) == len(prof.kernels)  # every group has a known cost here, so every one is drawn
    largest = prof.kernels.iloc[0]["op"].split("::")[-1]
    assert any(t.startswith("1. ") and largest in t for t in labels)  # numbered by time, largest first
    report = prof.advise()
    assert report.run_time_s == prof.summary["window_s"]
    (chain,) = report.findings_of("fusion.memory-chain")  # add (bias), gelu, add (residual): one pass would do
    chain_ops = sorted(prof.kernels.loc[list(chain.rows), "op"])
    assert chain_ops == ["aten::add", "aten::add", "aten::gelu"]
    assert 0 < chain.est_saving_s < prof.kernels.loc[list(chain.rows), "time_s"].sum()
    path = tmp_path / "api.profile.json"
    prof.save(str(path))
    again = rooflinectl.load(str(path))
    assert again.kernels["flops"].sum() == prof.kernels["flops"].sum()


def test_capture_round_trips_through_a_gzipped_file(tmp_path) -> None:
    from rooflinectl.capture.run.session import load_capture, profiling, save_capture

    with profiling("cpu") as capture:
        torch.randn(8, 8) @ torch.randn(8, 8)
    path = tmp_path / "c.capture.json.gz"
    save_capture(capture, str(path))
    again = load_capture(str(path))
    assert [o.name for o in again.trace.ops] == [o.name for o in capture.trace.ops]
    assert again.metadata["device_kind"] == "cpu"
