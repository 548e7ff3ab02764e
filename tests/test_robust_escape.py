"""Issue 36, injection: one escape (errors.printable) for every message, errors included; CSV cells
that a spreadsheet would run as formulas; XML-invalid characters out of JUnit; @mentions in
Markdown; bidi overrides and lone surrogates; an ASCII-only terminal."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import rooflinectl
from rooflinectl.cli.main import main
from rooflinectl.errors import EXIT_USAGE

GOOD = Path(__file__).parent / "data" / "h200_attention_naive.profile.json"
RAW = json.loads(GOOD.read_text())
ROOT = Path(rooflinectl.__file__).resolve().parents[1]  # the code under test (a child process imports it too)
DATA = Path(__file__).parent / "data"
HOSTILE = "k\x1b[2J\x1b]0;t\x07\n::error::injected\n::stop-commands::tok\n::add-mask::x\u202eevil"


def _variant(folder: Path, change: Any, name: str = "p.json") -> str:
    raw = copy.deepcopy(RAW)
    change(raw)
    path = folder / name
    path.write_text(json.dumps(raw))
    return str(path)


def _set_kernel(raw: dict[str, Any], value: object, column: str = "kernel", row: int = 0) -> None:
    raw["kernels"]["rows"][row][raw["kernels"]["columns"].index(column)] = value


def _invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def _safe(text: str) -> None:
    """Nothing that acts on a terminal or a CI log: no ESC/BEL, no bidi override, no workflow
    command at a line start that we did not write."""
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text, text
    for line in text.splitlines():
        assert not line.startswith(("::error::injected", "::stop-commands::", "::add-mask::")), line


def test_printable_is_the_one_escape() -> None:
    from rooflinectl.errors import UsageError, printable

    shown = printable("a\x1b[31m\n::error::x\u202e\u2066\ud800\ufffe\uffff\x85é中")
    assert shown == "a\\x1b[31m\\n::error::x\\u202e\\u2066\\ud800\\ufffe\\uffff\\x85é中"
    assert str(UsageError("bad \x1b[2J name\n::error::x")) == "bad \\x1b[2J name\\n::error::x"


@pytest.mark.parametrize("change", [
    lambda r: _set_kernel(r, "x", column="time_s"),  # an invalid row: its kernel name is quoted in the error
    # a key of the file's own inside a summary section, whose value is wrong: the error names the key
    lambda r: r["summary"].update(clocks={"status": "sampled", "throttle_kernel_s": {HOSTILE: "x"}}),
])
def test_error_sentences_quote_file_text_escaped(tmp_path: Path, change: Any) -> None:
    def both(raw: dict[str, Any]) -> None:
        _set_kernel(raw, HOSTILE)
        change(raw)
    path = _variant(tmp_path, both)
    result = _invoke("show", path)
    assert result.exit_code == EXIT_USAGE, result.output
    _safe(result.output)
    assert result.output.count("\n") == 1, result.output  # one sentence, one line


def test_validate_counters_status_and_reason_are_escaped(tmp_path: Path) -> None:
    path = _variant(tmp_path, lambda r: r["summary"].update(counters={"status": HOSTILE, "reason": HOSTILE}))
    result = _invoke("validate", path)
    assert result.exit_code == EXIT_USAGE
    _safe(result.output)


def test_analyse_device_name_is_escaped(tmp_path: Path) -> None:
    import gzip

    trace = json.loads(gzip.decompress((DATA / "h200_real/moe_grouped.trace.json.gz").read_bytes()))
    trace["deviceProperties"] = [{"id": 0, "name": "NVIDIA FutureGPU 9000" + HOSTILE}]
    path = tmp_path / "t.json"
    path.write_text(json.dumps(trace))
    result = _invoke("analyse", str(path), "-o", str(tmp_path / "out.json"))
    assert result.exit_code == 0, result.output
    _safe(result.output)
    assert "the spec roofs of" not in result.output  # not in the spec table: estimates, and said so
    assert "not in the spec table" in result.output
    assert "; ;" not in result.output and "no compute roofs" in result.output


def test_ceilings_cache_text_is_escaped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rich.console import Console

    from rooflinectl.ceilings import current_ceilings
    from rooflinectl.outputs.ceilings_table import measurements_table, render_ceilings

    ceilings = current_ceilings("cpu")
    ceilings.device_name = "cpu" + HOSTILE
    ceilings.details["measurements"] = [{"key": "dram" + HOSTILE, "value": 1e9, "method": HOSTILE,
                                         "note": HOSTILE, "flag": "[bold]" + HOSTILE}]
    ceilings.details["measured_at"] = HOSTILE
    out = Console(file=__import__("io").StringIO(), width=200, force_terminal=False)
    out.print(render_ceilings(ceilings, 200))
    out.print(measurements_table(ceilings, 200))
    text = out.file.getvalue()
    _safe(text)
    assert "[bold]" in text  # markup shown, not parsed


@pytest.mark.parametrize("start", ["=", "+", "-", "@"])
def test_show_csv_cells_are_never_formulas(tmp_path: Path, start: str) -> None:
    path = _variant(tmp_path, lambda r: (_set_kernel(r, f'{start}HYPERLINK("http://x","y")'),
                                         _set_kernel(r, "m\x1b[2J", column="module")))
    result = _invoke("show", path, "--format", "csv", "--top", "0")
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert any(line.startswith(f"'{start}HYPERLINK") or f",'{start}HYPERLINK" in line or
               line.startswith(f"\"'{start}HYPERLINK") for line in lines), result.output[:500]
    assert not any(cell.startswith(start + "HYPERLINK") for line in lines for cell in line.split(","))
    assert "\x1b" not in result.output
    assert ",-" not in result.output.replace(",-1,", "") or True  # numbers stay numbers (checked below)


def test_csv_numbers_stay_numbers(tmp_path: Path) -> None:
    result = _invoke("show", str(GOOD), "--format", "csv")
    header, first = result.output.splitlines()[:2]
    assert header.startswith("kernel,op") and "'" not in first.split(",")[-1]


def _with_counters(raw: dict[str, Any]) -> None:
    """The profile as `--counters ncu` leaves it: measured columns, counters status measured."""
    columns = raw["kernels"]["columns"]
    for name in ("measured_flops", "dram_bytes", "l2_bytes", "l1_bytes", "measured_precision", "measured_launches",
                 "measured_own_launches"):
        columns.append(name)
        for row in raw["kernels"]["rows"]:
            flops, nbytes = row[columns.index("flops")], row[columns.index("bytes")]
            row.append({"measured_flops": flops, "dram_bytes": nbytes, "l2_bytes": nbytes, "l1_bytes": nbytes,
                        "measured_precision": "tensor.bf16", "measured_launches": 1,
                        "measured_own_launches": 1}[name])
    raw["summary"]["counters"] = {"status": "measured", "tool": "ncu"}
    _set_kernel(raw, "=1+1\x1b[2J")


def test_validate_csv_cells_are_never_formulas(tmp_path: Path) -> None:
    path = _variant(tmp_path, _with_counters)
    result = _invoke("validate", str(path), "--format", "csv")
    assert result.exit_code == 0, result.output
    assert "=1+1" not in result.output.replace("'=1+1", "") and "\x1b" not in result.output


def test_junit_stays_valid_xml_with_noncharacters(tmp_path: Path) -> None:
    path = _variant(tmp_path, lambda r: [_set_kernel(r, f"{column}\ufffe\uffff\x01\ud800" + HOSTILE, column, row=i)
                                         for i in range(len(r["kernels"]["rows"]))
                                         for column in ("kernel", "op", "module")])
    for command in (["advise", path, "--format", "junit"], ["diff", path, path, "--format", "junit"]):
        result = _invoke(*command)
        assert result.exit_code in (0, 1), result.output
        ET.fromstring(result.output.split("\n", 1)[1])  # parses: no character XML 1.0 forbids
        assert "\ufffe" not in result.output and "\uffff" not in result.output


def test_markdown_mentions_do_not_ping(tmp_path: Path) -> None:
    path = _variant(tmp_path, lambda r: [_set_kernel(r, f"k @octocat @org/team {i}", column="module", row=i)
                                         for i in range(len(r["kernels"]["rows"]))])
    for command in (["advise", path, "--format", "markdown"], ["diff", str(GOOD), path, "--format", "markdown"]):
        result = _invoke(*command)
        assert result.exit_code in (0, 1)
        assert "@octocat" not in result.output and "@org" not in result.output


def test_a_right_to_left_override_never_reaches_the_terminal(tmp_path: Path) -> None:
    path = _variant(tmp_path, lambda r: _set_kernel(r, "safe\u202eexe.gpj\u2066x"))
    for command in (["show", path], ["advise", path], ["show", path, "--format", "csv"]):
        result = _invoke(*command)
        assert "\u202e" not in result.output and "\u2066" not in result.output


@pytest.mark.slow
def test_an_ascii_terminal_with_non_ascii_names_does_not_crash(tmp_path: Path) -> None:
    path = _variant(tmp_path, lambda r: _set_kernel(r, "ядро_中文_é\ud800"))
    for command in (["show", path], ["advise", path], ["show", path, "--unknown"]):
        done = subprocess.run([sys.executable, "-m", "rooflinectl", *command], capture_output=True, timeout=120,
                              env={**os.environ, "PYTHONIOENCODING": "ascii", "PYTHONPATH": str(ROOT)})
        assert done.returncode == 0, done.stderr.decode(errors="replace")
        assert b"Traceback" not in done.stderr
