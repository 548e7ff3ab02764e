"""The counters subprocess paths on CPU: a fake `ncu` on PATH (tests/fake_ncu.py) runs the real
child program and prints the recorded H200 rows ncu would have measured, or fails the way ncu
fails. Each failure must end in one sentence naming cause and fix, with its documented exit code."""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from counters_data import MLP_ARGS, NCU_CSV, NCU_ROWS, REGION_LAUNCHES, recorded_profile

from rooflinectl.capture.ncu.metrics import ALL_METRICS
from rooflinectl.cli.main import main
from rooflinectl.cli.profile_counters import counters_line
from rooflinectl.errors import EXIT_COUNTERS, EXIT_ENVIRONMENT, CountersProblem, EnvironmentProblem
from rooflinectl.outputs.profile_file import load_profile
from rooflinectl.profiling_counters import CounterOptions, Target, collect_counters

ROOT = Path(__file__).resolve().parents[1]
FAKE = Path(__file__).parent / "fake_ncu.py"
MLP = Target(ROOT / "examples" / "mlp.py", None, MLP_ARGS)
SMALL_ARGS = ("--batch", "8", "--width", "32", "--steps", "1")  # the child's own run: small on CPU


@pytest.fixture
def fake_ncu(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "ncu"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_NCU_CSV", str(NCU_CSV))
    monkeypatch.setenv("FAKE_NCU_SKIP", str(NCU_ROWS - REGION_LAUNCHES))
    monkeypatch.setenv("FAKE_NCU_ARGS", str(tmp_path / "ncu-args.txt"))
    monkeypatch.setenv("FAKE_NCU_METRICS", ",".join(ALL_METRICS))
    monkeypatch.setenv("ROOFLINECTL_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


@pytest.fixture(scope="module")
def recorded():
    return recorded_profile()


def collect(recorded, target=MLP, **options):
    capture, data, launches = recorded
    said: list[str] = []
    result = collect_counters(data, launches, capture, target, CounterOptions("ncu", **options), said.append)
    return result, said


@pytest.mark.slow
def test_counters_run_measures_one_launch_per_group(fake_ncu, recorded, monkeypatch):
    monkeypatch.setenv("FAKE_NCU_RUN_CHILD", "1")  # the real child runs examples/mlp.py (on CPU here)
    result, said = collect(recorded, target=Target(MLP.path, None, SMALL_ARGS))
    args = (fake_ncu / "ncu-args.txt").read_text().splitlines()
    assert args[args.index("--clock-control") + 1] == "none"
    assert args[args.index("--profile-from-start") + 1] == "off"
    assert re.fullmatch(r":::\^\((\d+\|)*\d+\)\$", args[args.index("--kernel-id") + 1])
    child = args[args.index("-m") + 1:]
    assert child[:2] == ["rooflinectl.capture.ncu.child", "--status"] and "--regions" in child
    assert child[-len(SMALL_ARGS) - 1:] == ["--", *SMALL_ARGS]
    counters = result.summary["counters"]
    # planned per kernel name, as ncu 2025.3.1 numbered on the H200 (the fake numbers the same way)
    assert counters["status"] == "measured" and counters["numbering_rule"] == "name"
    assert counters["launches_counted"] == REGION_LAUNCHES
    assert counters["launches_measured"] < REGION_LAUNCHES  # sampled, not every launch
    kernel_rows = ~result.kernels["kernel"].str.startswith(("Memcpy", "Memset"))
    assert ((result.kernels["measured_launches"] > 0) == kernel_rows).all()
    measured = counters["launches_measured"]
    assert f"measure {measured} of 43 launches (1 per sampling class" in said[0]
    assert f"{counters['classes']} classes over" in said[0]
    line = counters_line(result.summary)
    assert f"measured {measured} of 43 launches ({counters['classes']} of {counters['classes']} sampling classes" in line
    table = result.kernels
    assert int(table["measured_own_launches"].sum()) == measured  # every measured launch is one row's own
    borrowed = int(((table["measured_launches"] > 0) & (table["measured_own_launches"] == 0)).sum())
    assert counters["rows_shared"] == borrowed and (f"{borrowed} shared within their class" in line) == (borrowed > 0)
    assert counters["metrics_missing"] == []  # the fake lists every metric, fp64 tensor ops included


def test_a_script_without_region_is_measured_whole_and_joined_to_its_steady_state(fake_ncu, monkeypatch):
    # no region: the child counts the whole script, so ncu numbers (and may measure) the setup
    # launches too; the profile's table is the steady state (its steps marked: see counters_data)
    monkeypatch.setenv("FAKE_NCU_SKIP", "0")
    result, said = collect(recorded_profile(steps_marked=True))
    child = (fake_ncu / "ncu-args.txt").read_text().splitlines()
    assert "--regions" not in child[child.index("-m") + 1:]
    counters = result.summary["counters"]
    assert counters["numbering_rule"] == "name" and counters["launches_counted"] == REGION_LAUNCHES
    assert counters["launches_in_window"] == NCU_ROWS and counters["setup_launches_measured"] > 0
    kernel_rows = ~result.kernels["kernel"].str.startswith(("Memcpy", "Memset"))
    assert ((result.kernels["measured_launches"] > 0) == kernel_rows).all()
    assert f"{NCU_ROWS - REGION_LAUNCHES} of the {NCU_ROWS} are setup" in said[0]
    assert "profiler_step" in counters["counted_part"]


def test_every_launch_when_asked_or_when_ncu_cannot_select(fake_ncu, recorded, monkeypatch):
    result, _ = collect(recorded, samples=0)
    assert result.summary["counters"]["launches_measured"] == REGION_LAUNCHES
    assert "--kernel-id" not in (fake_ncu / "ncu-args.txt").read_text().splitlines()
    monkeypatch.setenv("FAKE_NCU_MODE", "nohelp-kernel-id")
    result, _ = collect(recorded)
    assert result.summary["counters"]["launches_measured"] == REGION_LAUNCHES
    assert any("no --kernel-id" in n for n in result.summary["counters"]["notes"])


def test_results_printed_on_stdout_are_read_too(fake_ncu, recorded, monkeypatch):
    monkeypatch.setenv("FAKE_NCU_MODE", "stdout")
    on_stdout, _ = collect(recorded)
    monkeypatch.setenv("FAKE_NCU_MODE", "ok")
    in_log, _ = collect(recorded)
    assert on_stdout.summary["counters"]["launches_measured"] == in_log.summary["counters"]["launches_measured"] > 0


def test_a_warning_beside_results_is_kept_not_fatal(fake_ncu, recorded, monkeypatch):
    monkeypatch.setenv("FAKE_NCU_MODE", "warn")
    result, _ = collect(recorded)
    assert result.summary["counters"]["status"] == "measured"
    assert any("not supported" in w for w in result.summary["counters"]["ncu_warnings"])


def test_launch_budget_is_passed_and_honoured(fake_ncu, recorded):
    result, _ = collect(recorded, samples=0, launch_count=5)
    args = (fake_ncu / "ncu-args.txt").read_text().splitlines()
    assert args[args.index("--launch-count") + 1] == "5"
    assert result.summary["counters"]["launches_measured"] == 5


@pytest.mark.parametrize("mode, error, code, words", [
    ("perm", EnvironmentProblem, EXIT_ENVIRONMENT, "ERR_NVGPUCTRPERM"),
    ("unsupported", EnvironmentProblem, EXIT_ENVIRONMENT, "cannot profile this GPU"),
    ("crash", CountersProblem, EXIT_COUNTERS, "exited with code 9 before the program finished"),
    ("mismatch", CountersProblem, EXIT_COUNTERS, "do not line up"),
])
def test_failures_name_cause_and_fix(fake_ncu, recorded, monkeypatch, mode, error, code, words):
    monkeypatch.setenv("FAKE_NCU_MODE", mode)
    with pytest.raises(error, match=words) as caught:
        collect(recorded)
    assert caught.value.exit_code == code
    assert "\n" not in str(caught.value)


def test_replay_timeout_stops_ncu_and_says_what_to_do(fake_ncu, recorded, monkeypatch):
    monkeypatch.setenv("FAKE_NCU_MODE", "hang")
    with pytest.raises(CountersProblem, match="did not finish within 1 s.*--ncu-timeout") as caught:
        collect(recorded, timeout_s=1)
    assert caught.value.exit_code == EXIT_COUNTERS


def test_a_program_that_fails_under_ncu(fake_ncu, recorded, monkeypatch):
    monkeypatch.setenv("FAKE_NCU_MODE", "program-fails")  # the child's status file says exit code 3
    with pytest.raises(CountersProblem, match=r"failed when run again under ncu \(exit code 3: about to fail"):
        collect(recorded)


def test_missing_ncu(recorded, monkeypatch, tmp_path):
    if Path("/usr/local/cuda/bin/ncu").exists():
        pytest.skip("this machine has ncu in /usr/local/cuda/bin")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    monkeypatch.delenv("CUDA_PATH", raising=False)
    with pytest.raises(EnvironmentProblem, match="Nsight Compute \\(ncu\\) was not found.*--ncu PATH"):
        collect(recorded)


def test_cli_keeps_the_analytic_profile_when_counters_fail(tmp_path):
    script = tmp_path / "small.py"
    script.write_text("import torch\nprint(float((torch.ones(64, 64) @ torch.ones(64, 64)).sum()))\n")
    out = tmp_path / "p.json"
    args = ["profile", str(script), "-o", str(out), "--device", "cpu", "--counters", "ncu", "--"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == EXIT_ENVIRONMENT, result.output
    assert "rooflinectl: --counters ncu needs a CUDA GPU" in result.output and "Traceback" not in result.output
    data = load_profile(out)
    assert data.summary["counters"]["status"] == "failed" and len(data.kernels) > 0
    auto = CliRunner().invoke(main, [*args[:args.index("ncu")], "auto", *args[args.index("ncu") + 1:]])
    assert auto.exit_code == 0, auto.output
    assert "counters not read" in auto.output
    assert json.loads(out.read_text())["summary"]["counters"]["exit_code"] == EXIT_ENVIRONMENT


def test_a_failing_script_keeps_its_exit_code_and_skips_counters(tmp_path):
    script = tmp_path / "boom.py"
    script.write_text("import torch\ntorch.ones(3).sum()\nraise SystemExit(5)\n")
    out = tmp_path / "p.json"
    result = CliRunner().invoke(main, ["profile", str(script), "-o", str(out), "--device", "cpu", "--counters", "ncu"])
    assert result.exit_code == 5
    assert load_profile(out).summary["counters"]["status"] == "skipped"


def test_a_launch_skip_past_every_counted_launch_is_refused(fake_ncu, recorded):
    with pytest.raises(CountersProblem, match=f"skips all {REGION_LAUNCHES} counted launches") as caught:
        collect(recorded, launch_skip=REGION_LAUNCHES)
    assert caught.value.exit_code == EXIT_COUNTERS
    result, _ = collect(recorded, launch_skip=REGION_LAUNCHES - 1)  # the last launch is still eligible
    assert result.summary["counters"]["launches_measured"] >= 1
