"""[tool.rooflinectl] is checked (issue 16, case 10): a misspelt key is an error naming the
nearest valid one (a typo must not switch a gate off), numbers are finite and in range, and a
malformed table is one sentence, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from rooflinectl.cli.main import main
from rooflinectl.errors import EXIT_USAGE

PROFILE = Path(__file__).parent / "data" / "h200_attention_naive.profile.json"


@pytest.mark.parametrize("toml, message", [
    ("[tool.rooflinectl]\nmin_efficency = 0.5\n", "unknown key 'min_efficency' (did you mean min_efficiency?)"),
    ("[tool.rooflinectl]\nfail-onn = 'warning'\n", "did you mean fail_on?"),
    ("[tool.rooflinectl.advise]\nmax_unknown_shar = 0.1\n", "did you mean max_unknown_share?"),
    ("[tool.rooflinectl.advice]\nfail_on = 'info'\n", "unknown key 'advice' (did you mean advise?)"),
    ("[tool.rooflinectl]\nmin_efficiency = nan\n", "min_efficiency must be between 0 and 1, not nan"),
    ("[tool.rooflinectl]\nmax_launch_overhead = -0.2\n", "max_launch_overhead must be between 0 and 1"),
    ("[tool.rooflinectl]\nfail_on_regression = -5\n", "fail_on_regression must be a number >= 0"),
    ("[tool.rooflinectl]\nfail_on_regression = inf\n", "fail_on_regression must be a number >= 0"),
    ('tool = "x"\n', "`tool` must be a table"),
    ('[tool]\nrooflinectl = "x"\n', "tool.rooflinectl must be a table"),
    ("[tool.rooflinectl]\nadvise = 3\n", "advise must be a table"),
])
@pytest.mark.parametrize("command", ["advise", "diff"])
def test_bad_config_is_one_sentence(tmp_path: Path, toml: str, message: str, command: str) -> None:
    config = tmp_path / "pyproject.toml"
    config.write_text(toml)
    args = [command, str(PROFILE)] + ([str(PROFILE)] if command == "diff" else []) + ["--config", str(config)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == EXIT_USAGE, result.output
    assert message in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_good_config_still_reads(tmp_path: Path) -> None:
    config = tmp_path / "pyproject.toml"
    config.write_text("[tool.rooflinectl]\nmin-efficiency = 0.0\n[tool.rooflinectl.diff]\nfail_on_regression = 5\n"
                      "[tool.other]\nanything = 1\n")
    assert CliRunner().invoke(main, ["advise", str(PROFILE), "--config", str(config)]).exit_code == 0
    # and it is read, not ignored: the same gate at 0.99 fails this profile (its kernels are far under)
    config.write_text(config.read_text().replace("min-efficiency = 0.0", "min-efficiency = 0.99"))
    strict = CliRunner().invoke(main, ["advise", str(PROFILE), "--config", str(config), "--format", "json"])
    assert strict.exit_code == 1, strict.output
    assert "gate.min-efficiency" in strict.output
