"""Shell completion (README "Shell completion"): click's own, for bash, zsh and fish."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from rooflinectl.cli.main import main


def _complete(words: str, cword: int) -> list[str]:
    env = {"_ROOFLINECTL_COMPLETE": "bash_complete", "COMP_WORDS": words, "COMP_CWORD": str(cword)}
    result = CliRunner().invoke(main, [], prog_name="rooflinectl", env=env)
    assert result.exit_code == 0, result.output
    return [line.split(",", 1)[1] for line in result.output.splitlines()]


def test_commands_and_choices_complete() -> None:
    assert _complete("rooflinectl sh", 1) == ["show"]
    assert _complete("rooflinectl show --by ", 3) == ["kernel", "op", "module", "line"]
    assert set(_complete("rooflinectl advise --format ", 3)) == {"table", "markdown", "json", "github", "junit"}


@pytest.mark.parametrize("shell, marker", [("bash", "complete -o"), ("zsh", "#compdef rooflinectl"),
                                           ("fish", "complete --no-files --command rooflinectl")])
def test_the_documented_source_lines_work(shell: str, marker: str) -> None:
    result = CliRunner().invoke(main, [], prog_name="rooflinectl", env={"_ROOFLINECTL_COMPLETE": f"{shell}_source"})
    assert result.exit_code == 0 and marker in result.output
