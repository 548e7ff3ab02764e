"""Issue 35's conventions a user learns once: the top-level help in workflow order with whole
one-line descriptions, and messages that lead to the next command."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from rooflinectl.cli.main import COMMANDS, WORKFLOW_ORDER, main
from rooflinectl.errors import EXIT_USAGE, UsageError

DATA = Path(__file__).parent / "data"
TRACE = DATA / "h200_real" / "gpt2_fwd_eager.trace.json.gz"
CAPTURE = DATA / "h200_mlp_bf16.capture.json.gz"


def _commands_section(text: str) -> list[str]:
    return text.split("Commands:\n", 1)[1].splitlines()


def test_help_lists_commands_in_workflow_order_untruncated() -> None:
    result = CliRunner().invoke(main, ["--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = _commands_section(result.output)
    names = [line.split()[0] for line in lines]
    expected = [name for name in WORKFLOW_ORDER if name in COMMANDS]
    assert names[:len(expected)] == expected, result.output
    assert set(names) == set(COMMANDS), result.output
    assert names.index("profile") < names.index("show") < names.index("advise") < names.index("ceilings")
    for line, name in zip(lines, names, strict=True):
        assert len(line) <= 80 and not line.endswith(" "), line
        assert "..." not in line and line.split(None, 1)[1] == COMMANDS[name][1], result.output
        assert COMMANDS[name][1].endswith("."), name


def test_a_command_the_order_does_not_name_is_still_listed(monkeypatch) -> None:
    monkeypatch.setitem(COMMANDS, "zeta", ("show_cmd", "A command added later."))
    names = main.list_commands(None)  # type: ignore[arg-type]
    assert names[-1] == "zeta" and names[0] == "profile"


@pytest.mark.parametrize("command", ["show", "plot", "advise"])
@pytest.mark.parametrize("source,kind", [(TRACE, "torch.profiler trace"), (CAPTURE, "--save-capture file")])
def test_a_trace_given_as_a_profile_suggests_analyse(command, source, kind, tmp_path) -> None:
    plain = tmp_path / source.name.removesuffix(".gz")
    with gzip.open(source, "rb") as packed, plain.open("wb") as out:
        shutil.copyfileobj(packed, out)
    for path in (source, plain):
        result = CliRunner().invoke(main, [command, str(path)])
        assert result.exit_code == EXIT_USAGE, result.output
        message = result.output.strip()
        assert kind in message and f"rooflinectl analyse {path}`" in message, message
        assert message.count(". ") == 0 and "Traceback" not in message, message


def test_a_missing_function_lists_the_files_functions(tmp_path) -> None:
    from rooflinectl.capture.runner import load_function

    target = tmp_path / "work_mod.py"
    target.write_text("from os.path import join\n\n\ndef step():\n    return 1\n\n\n"
                      "def make_inputs():\n    return ()\n\n\ndef train_loop():\n    pass\n")
    with pytest.raises(UsageError) as caught:
        load_function(target, "nope")
    message = str(caught.value)
    assert "'nope'" in message and message.endswith("it defines: step, train_loop."), message
    assert "join" not in message and "make_inputs" not in message
