"""Issue 34 on a CUDA GPU: every kernel's time is in a row (the rows add up to the trace's kernel,
memcpy and memset durations exactly), an unknown kernel is shown under the op that did the work
(not a metadata child), and the indexing and pooling families are costed from their real shapes.
scripts/gpu.d/74-costs.sh holds the same families against Nsight Compute's DRAM bytes."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

from rooflinectl.attribution.join import attribute  # noqa: E402
from rooflinectl.capture.read.trace import from_chrome_trace  # noqa: E402
from rooflinectl.costs import NO_WORK_OPS  # noqa: E402

pytestmark = pytest.mark.gpu


def _work() -> None:
    x = torch.randn(2048, 2048, device="cuda")
    mask = x > 0
    i = torch.randint(0, 2048, (10000,), device="cuda")
    j = torch.randint(0, 2048, (10000,), device="cuda")
    x.nonzero()
    torch.histc(x)
    x[mask]
    x[i, j]
    y = x.clone()
    y[mask] = 0.0
    y.index_put_((i, j), torch.ones(10000, device="cuda"), accumulate=True)
    torch.nn.functional.max_pool2d(x.view(1, 4, 1024, 1024), 2, return_indices=True)
    torch.softmax(x.to(torch.bfloat16), -1, dtype=torch.float32)
    torch.cuda.synchronize()


def test_gpu_rows_hold_every_kernel_time_and_known_families(tmp_path):
    _work()
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities, record_shapes=True) as prof:
        _work()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = from_chrome_trace(json.loads(path.read_text()))
    launches = attribute(trace, "cuda", {}).launches
    device_ns = sum(k.dur_ns for k in trace.kernels)
    assert device_ns > 0
    assert launches["time_s"].sum() == pytest.approx(device_ns / 1e9, rel=1e-9)  # no time without a row
    assert not set(launches.loc[launches["cost_source"] == "none", "op"]) & NO_WORK_OPS
    for op in ("aten::index", "aten::index_put_", "aten::_index_put_impl_", "aten::max_pool2d_with_indices"):
        rows = launches[launches["op"] == op]
        if len(rows):
            assert (rows["cost_source"] != "none").all(), rows[["op", "kernel", "cost_note"]].to_string()
    pool = launches[launches["op"] == "aten::max_pool2d_with_indices"]
    assert pool["bytes"].sum() == pytest.approx(4 * 1024 * 1024 * 4 + 4 * 512 * 512 * (4 + 8))
