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
# What a second run measures anew: times and what is derived from them (rates, shares, bounds,
# the order of launches by time, launches shorter than a threshold), and when and how it was made.
TIMED_COLUMN_WORDS = ("time", "_per_s", "efficiency", "headroom", "bound", "above_roof", "suspect", "clock")
TIMED_KEYS = ("launch_sequence", "short_launches", "back_to_back_runs", "created", "command")


def _timed(key: str) -> bool:
    return key.endswith("_s") or "time_share" in key or key in TIMED_KEYS


def _untimed(value: object) -> object:
    """value without its measured times (recursively through dicts and lists)."""
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if not _timed(str(k))}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


def _rows(kernels: pd.DataFrame) -> list[tuple]:
    """Every kernel group with every column that is not a time or derived from one (kernel, op,
    module, shapes, dtype, calls, FLOPs, bytes, intensity, precision, cost source, launch config...)."""
    same = [c for c in kernels.columns if not any(word in c for word in TIMED_COLUMN_WORDS)]
    assert {"kernel", "op", "module", "shapes", "calls", "flops", "bytes", "intensity", "cost_source"} <= set(same)
    return sorted(map(tuple, kernels[same].astype(str).to_numpy().tolist()))


@pytest.mark.parametrize(("target", "cli_args", "api_args"), [
    # --iterations 3: the warm-up found by timings (attribution/steady.py) could differ between two runs
    ("script.py", ["--iterations", "3", "--", "9"], {"script_args": ["9"], "iterations": "3"}),
    ("script.py:step", ["--iters", "3", "--warmup", "1"], {"iters": 3, "warmup": 1}),
    # the counters phase on a CPU run: one path says why there are none (and the whole run is profiled)
    ("script.py", ["--iterations", "3", "--counters", "auto", "--", "9"],
     {"script_args": ["9"], "iterations": "3", "counters": "auto"}),
])
def test_the_cli_and_the_api_give_the_same_profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str,
                                                   cli_args: list[str], api_args: dict) -> None:
    (tmp_path / "script.py").write_text(SCRIPT.replace("int(sys.argv[1])", "int(sys.argv[1]) if len(sys.argv) > 1 else 2"))
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["profile", target, "-o", "cli.json", "--device", "cpu", "-q", *cli_args])
    assert result.exit_code == 0, result.output
    cli = load_profile(tmp_path / "cli.json")
    api = rooflinectl.profile(target, device="cpu", **api_args).data
    assert list(cli.kernels.columns) == list(api.kernels.columns)
    assert _rows(cli.kernels) == _rows(api.kernels)
    assert sorted(cli.summary) == sorted(api.summary)
    assert _untimed(cli.summary) == _untimed(api.summary)
    assert len(_untimed(cli.summary)) >= 15  # most of the summary is compared, not a few keys
    assert sorted(cli.metadata) == sorted(api.metadata)
    assert _untimed(cli.metadata) == _untimed(api.metadata)
    counters = api_args.get("counters", "none")
    if counters == "none":
        assert api.summary["unprofiled_steps"] == (9 - 5 - 1 if ":" not in target else 3)
    else:
        assert api.summary["counters"]["status"] == "failed" and "needs a CUDA GPU" in api.summary["counters"]["reason"]
        assert "profile_steps" not in api.summary  # counters measure the whole run


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
