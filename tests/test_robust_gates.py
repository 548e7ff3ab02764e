"""Issue 36, gates that passed wrongly: every threshold, flag and config value is validated once
(cli/values.py, cli/config.py); a gate the user set is never dropped; a gate on numbers it cannot
judge fails with exit 5 and says why."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from rooflinectl.cli.main import main
from rooflinectl.errors import EXIT_FINDINGS, EXIT_INCOMPLETE, EXIT_USAGE

GOOD = Path(__file__).parent / "data" / "h200_attention_naive.profile.json"
RAW = json.loads(GOOD.read_text())


def _variant(folder: Path, name: str, change: Any) -> str:
    raw = copy.deepcopy(RAW)
    change(raw)
    path = folder / name
    path.write_text(json.dumps(raw))
    return str(path)


def _column(raw: dict[str, Any], column: str, value: object) -> None:
    index = raw["kernels"]["columns"].index(column)
    for row in raw["kernels"]["rows"]:
        row[index] = value


def _invoke(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.fixture(autouse=True)
def _no_pyproject(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no pyproject.toml above: only the flags count


@pytest.mark.parametrize("args", [["diff", str(GOOD), str(GOOD), "--fail-on-regression", "nan"],
                                  ["diff", str(GOOD), str(GOOD), "--fail-on-regression", "inf"],
                                  ["advise", str(GOOD), "--min-efficiency", "nan"],
                                  ["advise", str(GOOD), "--max-unknown-share", "nan"],
                                  ["advise", str(GOOD), "--max-launch-overhead", "nan"],
                                  ["advise", str(GOOD), "--hide-below", "nan"]])
def test_nan_and_inf_thresholds_are_refused(args: list[str]) -> None:
    result = _invoke(*args)
    assert result.exit_code == EXIT_USAGE, result.output
    assert "finite" in result.output


def test_a_100x_slowdown_never_passes_a_nan_gate(tmp_path: Path) -> None:
    slow = _variant(tmp_path, "slow.json", lambda r: (_column(r, "time_s", 1.0), r["summary"].update(window_s=1e3)))
    assert _invoke("diff", str(GOOD), slow, "--fail-on-regression", "nan").exit_code != 0
    assert _invoke("diff", str(GOOD), slow, "--fail-on-regression", "5").exit_code == EXIT_FINDINGS


@pytest.mark.parametrize("narrow", [["--select", "fusion"], ["--ignore", "gate"],
                                    ["--ignore", "gate.min-efficiency"]])
def test_select_and_ignore_never_drop_a_gate_the_user_set(narrow: list[str]) -> None:
    result = _invoke("advise", str(GOOD), "--min-efficiency", "0.99", *narrow, "--format", "json")
    assert result.exit_code == EXIT_FINDINGS, result.output
    assert "gate.min-efficiency" in result.output


@pytest.mark.parametrize("name,change,args,why", [
    ("nosummary.json", lambda r: r.update(summary={}), ["advise", "--max-launch-overhead", "0"], "no summary"),
    ("iters.json", lambda r: r["summary"].update(iterations=1e300), ["advise", "--fail-on", "warning"],
     "iteration count"),
    ("zero.json", lambda r: _column(r, "time_s", 0.0), ["advise", "--fail-on", "error"], "all zero"),
    ("unknown.json", lambda r: _column(r, "cost_source", "none"), ["advise", "--min-efficiency", "0.5"],
     "no kernel has a known cost"),
    ("exit3.json", lambda r: (r["metadata"].update(exit_code=3), r["metadata"].pop("completed", None)),
     ["advise", "--fail-on", "error"], "did not complete"),
])
def test_a_gate_on_numbers_it_cannot_judge_fails_with_exit_5(tmp_path: Path, name: str, change: Any,
                                                             args: list[str], why: str) -> None:
    path = _variant(tmp_path, name, change)
    result = _invoke(args[0], path, *args[1:])
    assert result.exit_code == EXIT_INCOMPLETE, result.output
    assert why in result.output


@pytest.mark.parametrize("change,why", [(lambda r: _column(r, "time_s", 0.0), "all zero"),
                                        (lambda r: r["summary"].update(iterations=1e300), "iteration count"),
                                        (lambda r: r.update(summary={}), "no summary")])
def test_diff_gate_on_numbers_it_cannot_judge_fails_with_exit_5(tmp_path: Path, change: Any, why: str) -> None:
    bad = _variant(tmp_path, "bad.json", change)
    result = _invoke("diff", str(GOOD), bad, "--fail-on-regression", "5")
    assert result.exit_code == EXIT_INCOMPLETE, result.output
    assert why in result.output


def _config(folder: Path, text: str) -> Path:
    path = folder / "pyproject.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("text,says", [
    ("[tool.roofline]\nmin_efficiency = 0.99\n", "[tool.rooflinectl]"),
    ("[tool.roofline-ctl.diff]\nfail_on_regression = 5\n", "[tool.rooflinectl]"),
    ("[tool.rooflinectl.diff]\nmin_efficiency = 0.5\n", "read by no command"),
    ("[tool.rooflinectl]\nmin_efficiency = 0.5\nmin-efficiency = 0.1\n", "given twice"),
    ("[tool.rooflinectl]\nmin_efficiency = nan\n", "NaN"),
    ("[tool.rooflinectl.diff]\nfail_on_regression = inf\n", "NaN"),
])
def test_config_mistakes_are_errors_not_gates_switched_off(tmp_path: Path, text: str, says: str) -> None:
    config = _config(tmp_path, text)
    command = "diff" if "diff" in text else "advise"
    args = [str(GOOD), str(GOOD)] if command == "diff" else [str(GOOD)]
    result = _invoke(command, *args, "--config", str(config))
    assert result.exit_code == EXIT_USAGE, result.output
    assert says in result.output


def test_a_correct_config_still_gates(tmp_path: Path) -> None:
    config = _config(tmp_path, "[tool.rooflinectl]\nmin_efficiency = 0.99\n[tool.rooflinectl.diff]\n"
                               "fail_on_regression = 5\n")
    assert _invoke("advise", str(GOOD), "--config", str(config)).exit_code == EXIT_FINDINGS
    assert _invoke("diff", str(GOOD), str(GOOD), "--config", str(config)).exit_code == 0
