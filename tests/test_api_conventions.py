"""Issue 35's Python API: short reprs, AdviceReport.to_frame(), dir(rooflinectl) showing the
public names only, and trace_handler inside a user's own torch.profiler schedule."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

import rooflinectl
from rooflinectl.cli.main import main

DATA = Path(__file__).parent / "data"
MLP = DATA / "h200_mlp.profile.json"


def test_dir_shows_public_names_only_and_imports_nothing_heavy() -> None:
    code = ("import json, sys, rooflinectl; names = dir(rooflinectl); "
            "print(json.dumps([names, [m for m in ('torch', 'pandas') if m in sys.modules]]))")
    names, heavy = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                             check=True, timeout=120).stdout)
    assert names == sorted(rooflinectl.__all__) and "trace_handler" in names
    assert not {"importlib", "annotations", "Any"} & set(names) and heavy == []


def test_profile_repr_is_one_short_line() -> None:
    profile = rooflinectl.load(str(MLP))
    text = repr(profile)
    kernels = profile.kernels
    top = kernels.loc[kernels["time_s"].idxmax()]
    assert "\n" not in text and len(text) < 200, text
    shown = re.match(r"<rooflinectl\.Profile NVIDIA H200: ([0-9.]+) ms kernel time over 1 iteration,", text)
    assert shown, text
    assert float(shown.group(1)) == pytest.approx(kernels["time_s"].sum() * 1e3, abs=0.05)  # the table's own total
    assert f"{len(kernels)} groups" in text and "100.0% of it of known cost" in text
    assert f"top: {top['op']} {100 * top['time_share']:.1f}% ({top['bound']}-bound)" in text


def test_advice_report_repr_and_frame() -> None:
    report = rooflinectl.load(str(MLP)).advise()
    frame = report.to_frame()
    every = [*report.findings, *report.left_out]
    assert isinstance(frame, pd.DataFrame) and len(frame) == len(every) > 0
    assert {"rule_id", "severity", "subject", "est_saving_s", "count", "shown"} <= set(frame.columns)
    assert list(frame["rule_id"]) == [f.rule_id for f in every]
    assert frame["est_saving_s"].tolist() == [f.est_saving_s for f in every]
    text = repr(report)
    assert "\n" not in text and len(text) < 240, text
    warnings = sum(f.severity == "warning" for f in every)
    assert f"{len(every)} findings" in text and f"{warnings} warning" in text, text
    assert f"top: {report.findings[0].rule_id}" in text


def test_trace_handler_in_a_users_schedule_gives_analyses_profile(tmp_path) -> None:
    import torch
    from torch.profiler import ProfilerActivity, profile, schedule

    seen: list[rooflinectl.Profile] = []
    trace = tmp_path / "cycle.trace.json"
    handler = rooflinectl.trace_handler(seen.append, trace=trace)
    x, w = torch.randn(64, 64), torch.randn(64, 64)
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=3, repeat=1),
                 on_trace_ready=handler, record_shapes=True) as prof:
        for _ in range(6):
            torch.relu(x @ w).sum()
            prof.step()
    assert len(seen) == 1 and handler.profiles == seen
    ours = seen[0].kernels
    mm = ours[ours["op"] == "aten::mm"].iloc[0]
    assert mm["flops"] == 2 * 64 * 64 * 64 * mm["calls"] and mm["calls"] >= 2  # flops: all calls together
    written = tmp_path / "analysed.profile.json"
    result = CliRunner().invoke(main, ["analyse", str(trace), "-o", str(written), "-q"])
    assert result.exit_code == 0, result.output
    theirs = rooflinectl.load(str(written)).kernels
    keys = ["kernel", "op", "shapes", "calls", "time_s", "flops", "bytes"]
    pd.testing.assert_frame_equal(ours[keys].reset_index(drop=True), theirs[keys].reset_index(drop=True))
    assert seen[0].summary["iterations"] == rooflinectl.load(str(written)).summary["iterations"]
