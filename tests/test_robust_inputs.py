"""Issue 36, tracebacks and unclear messages: every bad input is one sentence with a documented
exit code (a lone surrogate, a 5,000-digit integer, JSON nested 2,000 deep, /dev/zero, a string
schema_version, a damaged trace), and `analyse` writes no profile its own loader would refuse."""

from __future__ import annotations

import copy
import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import rooflinectl
from rooflinectl.cli.main import main

GOOD = Path(__file__).parent / "data" / "h200_attention_naive.profile.json"
RAW = json.loads(GOOD.read_text())
ROOT = Path(rooflinectl.__file__).resolve().parents[1]  # the code under test (a child process imports it too)
DATA = Path(__file__).parent / "data"
TRACE = DATA / "h200_real/moe_grouped.trace.json.gz"
EXIT_USAGE = 2


def _invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def _one_sentence(result: Any, code: int = EXIT_USAGE) -> str:
    assert result.exit_code == code, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output and "Aborted" not in result.output
    return result.output


def _variant(folder: Path, change: Any) -> str:
    raw = copy.deepcopy(RAW)
    change(raw)
    path = folder / "p.json"
    path.write_text(json.dumps(raw))
    return str(path)


@pytest.mark.parametrize("command", [["show"], ["show", "--format", "csv"], ["show", "--format", "json"],
                                     ["advise"], ["advise", "--format", "markdown"], ["advise", "--format", "json"],
                                     ["advise", "--format", "github"], ["advise", "--format", "junit"],
                                     ["plot", "--terminal"]])
def test_a_lone_surrogate_in_a_name_is_shown_escaped(tmp_path: Path, command: list[str]) -> None:
    path = _variant(tmp_path, lambda r: [row.__setitem__(0, "k\ud800x") for row in r["kernels"]["rows"]])
    result = _invoke(command[0], path, *command[1:])
    _one_sentence(result, 0)


def test_a_lone_surrogate_in_a_chart_file(tmp_path: Path) -> None:
    path = _variant(tmp_path, lambda r: [row.__setitem__(0, "k\ud800x") for row in r["kernels"]["rows"]])
    result = _invoke("plot", path, "-o", str(tmp_path / "c.png"))
    _one_sentence(result, 0)
    assert (tmp_path / "c.png").stat().st_size > 0


def test_a_gate_on_a_surrogate_profile_is_a_verdict_not_a_crash(tmp_path: Path) -> None:
    path = _variant(tmp_path, lambda r: [row.__setitem__(0, "k\ud800x") for row in r["kernels"]["rows"]])
    result = _invoke("advise", path, "--min-efficiency", "0.01", "--format", "markdown")
    _one_sentence(result, 0)


@pytest.mark.parametrize("text,says", [
    (json.dumps(RAW)[:-1] + ', "x": ' + "9" * 5000 + "}", "number too long"),
    ("[" * 2000 + "]" * 2000, "nested too deeply"),
    (json.dumps({**RAW, "schema_version": "1"}), "the string '1'"),
])
def test_hostile_json_is_one_sentence(tmp_path: Path, text: str, says: str) -> None:
    path = tmp_path / "p.json"
    path.write_text(text)
    assert says in _one_sentence(_invoke("show", str(path)))


def test_show_dev_zero_reads_nothing_endless() -> None:
    assert "device" in _one_sentence(_invoke("show", "/dev/zero"))


def test_an_endless_pipe_is_read_to_a_bound_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rooflinectl.outputs import profile_file

    monkeypatch.setattr(profile_file, "MAX_PROFILE_BYTES", 1 << 20)
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (2 << 20))
    assert "larger than" in _one_sentence(_invoke("show", str(big)))


def test_negative_counter_bytes_are_refused(tmp_path: Path) -> None:
    def change(raw: dict[str, Any]) -> None:
        raw["kernels"]["columns"].append("dram_bytes")
        for i, row in enumerate(raw["kernels"]["rows"]):
            row.append(-9.97e9 if i == 0 else 1e6)
    assert "dram_bytes" in _one_sentence(_invoke("show", _variant(tmp_path, change)))


def _trace(folder: Path, change: Any, name: str = "t.json") -> Path:
    trace = json.loads(gzip.decompress(TRACE.read_bytes()))
    change(trace)
    path = folder / name
    path.write_text(json.dumps(trace))
    return path


def _kernels(trace: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "kernel"]


@pytest.mark.parametrize("change,says", [
    (lambda t: _kernels(t)[0].update(ts="yesterday"), "no usable start time"),
    (lambda t: _kernels(t)[0].update(dur=-5), "negative"),
    (lambda t: _kernels(t)[0].update(dur=1e300), "impossible duration"),
    (lambda t: [k.pop("ts") for k in _kernels(t)[1:]], "no usable start time"),
    (lambda t: _kernels(t)[0].update(ts=1e300), "start time"),
])
def test_analyse_refuses_a_damaged_trace_and_keeps_the_last_profile(tmp_path: Path, change: Any, says: str) -> None:
    shutil.copy(GOOD, tmp_path / "last.json")
    before = (tmp_path / "last.json").read_bytes()
    path = _trace(tmp_path, change)
    output = _one_sentence(_invoke("analyse", str(path), "-o", str(tmp_path / "last.json"), "-q"))
    assert says in output
    assert (tmp_path / "last.json").read_bytes() == before


def test_a_truncated_gzip_trace_is_one_sentence(tmp_path: Path) -> None:
    raw = TRACE.read_bytes()
    path = tmp_path / "t.json.gz"
    path.write_bytes(raw[: len(raw) // 2])
    assert "truncated" in _one_sentence(_invoke("analyse", str(path), "-o", str(tmp_path / "o.json"), "-q"))


@pytest.mark.slow
def test_a_function_that_raises_is_not_said_to_be_a_script_that_did_not_run(tmp_path: Path) -> None:
    script = tmp_path / "f.py"
    script.write_text("def step():\n    raise RuntimeError('boom')\n")
    done = subprocess.run([sys.executable, "-m", "rooflinectl", "profile", f"{script}:step", "--device", "cpu"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=240,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 1, done.stderr
    assert "the script did not run" not in done.stderr and "the function or its file raised" in done.stderr


def test_advise_to_dev_stdout_through_a_pipe(tmp_path: Path) -> None:
    """`advise -o /dev/stdout | cat`: /dev/stdout is a pipe, written into (no temp file beside it)."""
    done = subprocess.run(["bash", "-c", "set -o pipefail; \"$0\" -m rooflinectl advise \"$1\" --format markdown "
                           "-o /dev/stdout | cat", sys.executable, str(GOOD)], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert "rooflinectl advice" in done.stdout


@pytest.mark.slow
def test_a_script_that_closes_stdout_still_gets_its_table(tmp_path: Path) -> None:
    script = tmp_path / "s.py"
    script.write_text("import sys\nimport torch\nx = torch.randn(16, 16)\ny = x @ x\nsys.stdout.close()\n")
    done = subprocess.run([sys.executable, "-m", "rooflinectl", "profile", str(script), "--device", "cpu"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=240,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "profile written to" in done.stderr


def test_a_char_device_output_is_written_into(tmp_path: Path) -> None:
    """A device node of the test's own (the null device's numbers), never the system's."""
    node = tmp_path / "null"
    try:
        os.mknod(node, 0o666 | 0o020000, os.makedev(1, 3))
    except (PermissionError, OSError):
        pytest.skip("cannot create a device node here")
    result = _invoke("advise", str(GOOD), "-o", str(node))
    assert result.exit_code == 0, result.output
    assert node.is_char_device()
