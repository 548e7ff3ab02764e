"""`rooflinectl advise` on an 80-column terminal: the table fits as `show` does (a short column
gives way, rule ids stay whole), and the evidence and fix lines wrap under their text."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from rooflinectl.cli.main import main

PROFILE = Path(__file__).parent / "data" / "h200_attention_naive.profile.json"


def test_advise_fits_80_columns(monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    result = CliRunner().invoke(main, ["advise", str(PROFILE)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= 80, result.output
    rows = [line for line in lines if line[:2].strip().isdigit() and line[1:3] != ". "]
    assert rows, result.output
    for rule in ("launch.overhead", "attention.materialised-scores", "fusion.memory-chain"):
        assert any(f" {rule} " in row for row in rows), (rule, result.output)  # whole, on its row
    header = next(line for line in lines if line.startswith("#"))
    assert "finding" in header and "severity" not in header  # severity gave way (the detail says it)
    assert "[launch.overhead, warning]" in result.output
    # the table's rows: at most 4 lines each (were up to 7 at 80 columns, a word per line)
    table = lines[lines.index(header) + 2:next(i for i, line in enumerate(lines) if line.startswith("1. "))]
    starts = [i for i, line in enumerate(table) if line[:2].strip().isdigit()]
    assert max(b - a for a, b in zip(starts, starts[1:] + [len(table)])) <= 4, result.output
    # continuation lines of the evidence stay under its text, not at column 0
    evidence = next(i for i, line in enumerate(lines) if line.startswith("   evidence: "))
    assert lines[evidence + 1].startswith(" " * len("   evidence: ")), result.output


def test_advise_wide_keeps_every_column(monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "160")
    result = CliRunner().invoke(main, ["advise", str(PROFILE)])
    header = next(line for line in result.output.splitlines() if line.startswith("#"))
    assert "severity" in header and "share" in header
