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
    from rooflinectl.capture.run.runner import load_function

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
def test_kernels_leaves_the_users_profile_alone(interpreted_kernels, tmp_path, monkeypatch) -> None:
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


MLP = DATA / "h200_mlp.profile.json"  # four findings, two of them warnings


@pytest.mark.parametrize("fail_on", [None, "info", "warning", "error"])
def test_advise_junit_failures_agree_with_the_exit_code(fail_on) -> None:
    import xml.etree.ElementTree as ET

    args = ["advise", str(MLP), "--format", "junit"] + (["--fail-on", fail_on] if fail_on else [])
    result = CliRunner().invoke(main, args)
    failures = int(ET.fromstring(result.stdout).get("failures"))
    assert (failures > 0) == (result.exit_code != 0), (fail_on, failures, result.exit_code)
    assert result.exit_code == (1 if fail_on in ("info", "warning") else 0)


def test_diff_junit_counts_a_regression_past_top() -> None:
    import xml.etree.ElementTree as ET

    from test_plot_helpers import GPU_ROWS, make_profile

    from rooflinectl.analysis.diff import diff_profiles
    from rooflinectl.outputs.diff import render_diff_junit

    faster_gemm = [(*r[:7], r[7] * 0.5, *r[8:]) if r[1] == "aten::mm" and r[3] == "model.mlp.fc1" else r for r in GPU_ROWS]
    new_rows = [(*r[:7], r[7] * 1.6, *r[8:]) if r[1] == "aten::_softmax" else r for r in faster_gemm]
    report = diff_profiles(make_profile(GPU_ROWS), make_profile(new_rows))
    regressed = [g for g in report.changed if report.group_regressed(g, 10)]
    assert not report.total_regressed(10) and regressed and report.changed.index(regressed[0]) >= 1
    root = ET.fromstring(render_diff_junit(report, 10, top=1))
    assert int(root.get("failures")) == len(report.regressions(10)) == 1
    assert root.find(f".//testcase[@name='{regressed[0].label}']/failure") is not None


def test_markdown_for_a_pr_comment_has_no_cli_chatter() -> None:
    for args, verdict in (([], None), (["--fail-on", "warning"], "check at warning: failed")):
        result = CliRunner().invoke(main, ["advise", str(MLP), "--format", "markdown", *args])
        head = result.stdout.split("\n\n")[1]
        assert "exit" not in head and "--fail-on" not in head and "rooflinectl:" not in result.stdout, head
        assert head.endswith("Amdahl-capped\\)." if verdict is None else verdict + "."), head


_FILLER = {"the", "and", "with", "each", "from", "its", "what", "this", "for", "not", "them", "one", "two",
           "are", "all", "any", "can", "per"}


def _pairs(text: str) -> set[tuple[str, str]]:
    """Neighbouring content words (their first 5 letters: `finding`/`findings` are one word; a
    dotted name such as torch.profiler is one word)."""
    import re

    words = [w[:5] for w in re.findall(r"[a-z][a-z._]+[a-z]", text.lower()) if w not in _FILLER]
    return set(zip(words, words[1:]))


def test_help_body_does_not_restate_its_first_line() -> None:
    """One help style (issue 35): a command's help opens with its one-line summary (the line the
    top-level help lists); the paragraph under it adds to it (the arguments, what it leaves out)
    rather than saying the same again in other words, as `advise --help` did ("Recommend fixes:
    each finding with evidence and the time it saves." then "Recommendations from a profile:
    each finding with evidence, the fix and the time it saves.")."""
    import click

    ctx = click.Context(main)
    restated = {}
    for name, (_, summary) in COMMANDS.items():
        help_text = main.get_command(ctx, name).help or ""
        first, _, body = help_text.strip().partition("\n\n")
        assert first == summary, name
        shared = _pairs(summary) & _pairs(body.split("\n\n")[0])
        if shared:
            restated[name] = sorted(shared)
    assert not restated, restated
