"""One profiling pipeline (rooflinectl/profiling.py): `rooflinectl profile` and
`rooflinectl.profile()` give the same profile for the same target and options (rows and costs;
times are measured, so they differ), and the API gains the CLI's options."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

import rooflinectl
from rooflinectl.cli.main import main
from rooflinectl.errors import UsageError
from rooflinectl.outputs.profile_file import load_profile

SCRIPT = """
import sys, torch
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.Linear(64, 8))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(16, 32)
for _ in range(int(sys.argv[1])):
    model(x).square().mean().backward()
    opt.step()
    opt.zero_grad()

def step():
    with torch.no_grad():
        return model(x)
"""
SAME = ["kernel", "op", "module", "calls", "flops", "bytes", "precision", "cost_source"]
SAME_SUMMARY = ["iterations", "iterations_method", "iterations_found", "launches", "profile_steps",
                "profile_steps_rule", "profile_steps_marker", "unprofiled_steps", "unprofiled_timed_by"]


def _rows(kernels: pd.DataFrame) -> list[tuple]:
    return sorted(map(tuple, kernels[SAME].astype(str).to_numpy().tolist()))


@pytest.mark.parametrize(("target", "cli_args", "api_args"), [
    # --iterations 3: the warm-up found by timings (attribution/steady.py) could differ between two runs
    ("script.py", ["--iterations", "3", "--", "9"], {"script_args": ["9"], "iterations": "3"}),
    ("script.py:step", ["--iters", "3", "--warmup", "1"], {"iters": 3, "warmup": 1}),
])
def test_the_cli_and_the_api_give_the_same_profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str,
                                                   cli_args: list[str], api_args: dict) -> None:
    (tmp_path / "script.py").write_text(SCRIPT.replace("int(sys.argv[1])", "int(sys.argv[1]) if len(sys.argv) > 1 else 2"))
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["profile", target, "-o", "cli.json", "--device", "cpu", "-q", *cli_args])
    assert result.exit_code == 0, result.output
    cli = load_profile(tmp_path / "cli.json")
    api = rooflinectl.profile(target, device="cpu", **api_args).data
    assert _rows(cli.kernels) == _rows(api.kernels)
    assert {k: cli.summary.get(k) for k in SAME_SUMMARY} == {k: api.summary.get(k) for k in SAME_SUMMARY}
    assert api.summary["unprofiled_steps"] == (9 - 5 - 1 if ":" not in target else 3)


@pytest.mark.slow
def test_the_api_saves_the_trace_and_takes_the_sampling_options(tmp_path: Path) -> None:
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    trace = tmp_path / "t.json"
    whole = rooflinectl.profile(str(script), script_args=["7"], device="cpu", profile_steps="all", save_trace=str(trace))
    assert "profile_steps" not in whole.summary and whole.summary["iterations_found"] == 7
    assert json.loads(trace.read_text())["rooflinectl"]["tool"] == "rooflinectl"  # annotated by us
    sampled = rooflinectl.profile(str(script), script_args=["7"], device="cpu", profile_steps="3")
    assert sampled.summary["profile_steps"] == 3 and sampled.summary["unprofiled_steps"] == 7 - 3 - 1


def test_a_callable_is_timed_without_the_profiler_too(tmp_path: Path) -> None:
    import torch

    a = torch.randn(64, 64)
    p = rooflinectl.profile(lambda: a @ a, warmup=1, iters=4, device="cpu")
    times = p.step_times()
    assert p.summary["unprofiled_steps"] == 4 and p.summary["unprofiled_timed_by"] == "wall_clock"
    assert times["unprofiled_s"] is not None and 0 < times["unprofiled_s"] < 1.0
    assert times["profiled_s"] is not None and times["profiled_s"] > 0
    with pytest.raises(UsageError, match="a callable in this process cannot be run again"):
        rooflinectl.profile(lambda: a @ a, device="cpu", counters="ncu")
