"""`rooflinectl show --unknown`: the ops and kernels without a cost, the time they hold, and why."""

from __future__ import annotations

import json

from click.testing import CliRunner
from test_attribution_costs import _kernel, _launch, _op
from test_attribution_h200_trace import H200

from rooflinectl.capture.read.trace import from_chrome_trace
from rooflinectl.capture.run.session import Capture
from rooflinectl.cli.main import main
from rooflinectl.outputs.profile_file import save_profile
from rooflinectl.pipeline import profile_data


def _profile(tmp_path):
    events = [
        _op("aten::mm", 0.0, 5.0, 1, [[64, 64], [64, 64]], ["float", "float"]),  # costed: 10 us
        _launch(1.0, 11), _kernel("gemm_kernel", 10.0, 1, 11),
        _op("aten::histc", 20.0, 5.0, 2, [[1024]], ["float"]),
        _launch(21.0, 12), _kernel("nonzero_kernel", 30.0, 2, 12),
        _launch(40.0, 13), _kernel("mystery_kernel", 50.0, 99, 13),
        _launch(60.0, 14), _kernel("mystery_kernel", 70.0, 98, 14),
    ]
    capture = Capture("cuda", from_chrome_trace({"traceEvents": events}), {"device_name": "NVIDIA H200"})
    path = tmp_path / "p.json"
    save_profile(profile_data(capture, command=["test"], completed=True, exit_code=0, ceilings=H200), path)
    return path


def test_show_unknown_lists_time_and_reason(tmp_path):
    path = _profile(tmp_path)
    result = CliRunner().invoke(main, ["show", str(path), "--unknown"])
    assert result.exit_code == 0, result.output
    assert "unknown cost: 75.0% of kernel time in 2 group(s)" in result.output  # 3 of 4 kernels of 10 us
    assert "no cost formula for aten::histc" in result.output
    assert "no op linked" in result.output
    assert "gemm_kernel" not in result.output  # costed kernels are not listed
    rows = json.loads(CliRunner().invoke(main, ["show", str(path), "--unknown", "--format", "json"]).output)["kernels"]
    assert [(r["kernel"], r["calls"], round(r["time_share"], 3)) for r in rows] == [
        ("mystery_kernel", 2, 0.5), ("nonzero_kernel", 1, 0.25)]
