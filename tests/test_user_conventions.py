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


def test_kernels_help_names_its_own_default_file() -> None:
    from rooflinectl.cli.kernels_cmd import KERNELS_PROFILE_PATH, command
    from rooflinectl.schema import DEFAULT_PROFILE_PATH

    output = next(p for p in command.params if p.name == "output")
    assert output.default == KERNELS_PROFILE_PATH != DEFAULT_PROFILE_PATH
    text = " ".join(CliRunner().invoke(main, ["kernels", "--help"]).output.split())
    assert f"[default: {KERNELS_PROFILE_PATH}]" in text and f"never over `profile`'s {DEFAULT_PROFILE_PATH}" in text


@pytest.mark.triton
def test_kernels_leaves_the_users_profile_alone(interpreted_lessons, tmp_path, monkeypatch) -> None:
    from rooflinectl.cli.kernels_cmd import KERNELS_PROFILE_PATH
    from rooflinectl.outputs.profile_file import load_profile
    from rooflinectl.schema import DEFAULT_PROFILE_PATH

    monkeypatch.chdir(tmp_path)
    mine = (DATA / "h200_mlp.profile.json").read_bytes()
    (tmp_path / DEFAULT_PROFILE_PATH).write_bytes(mine)
    result = CliRunner().invoke(main, ["kernels", "--interpret", "--only", "vector_add", "--format", "json"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / DEFAULT_PROFILE_PATH).read_bytes() == mine
    assert "vector_add" in set(load_profile(tmp_path / KERNELS_PROFILE_PATH).kernels["module"].str.split("/").str[0])
