"""One output-format registry (outputs/formats.py) and issue 35's conventions built on it: the
same --format names in every command, the format taken from -o's extension, --top/--all
everywhere, show's --sort/--filter as plot's, and per-iteration numbers that agree across views."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import click
import pandas as pd
import pytest
from click.testing import CliRunner

from rooflinectl.analysis.selection import filter_groups, sort_groups
from rooflinectl.cli.main import main
from rooflinectl.errors import EXIT_USAGE, UsageError
from rooflinectl.outputs import formats
from rooflinectl.outputs.profile_file import load_profile
from rooflinectl.units import seconds

DATA = Path(__file__).parent / "data"
MLP = DATA / "report_mlp.profile.json"  # the 26-group MLP profile these figures were read from
NAIVE, SDPA = DATA / "h200_attention_naive.profile.json", DATA / "h200_attention_sdpa.profile.json"
# each command that has --format, and the report kind its choices come from
COMMAND_KINDS = {"show": "profile", "advise": "advice", "diff": "diff", "ceilings": "ceilings",
                 "validate": "validate", "kernels": "kernels"}


def _run(*args: object, env: dict[str, str] | None = None):
    return CliRunner().invoke(main, [str(a) for a in args], env=env)


def _format_choices(name: str) -> tuple[str, ...]:
    command = main.get_command(click.Context(main), name)
    option = next(p for p in command.params if p.name == "fmt")
    return tuple(option.type.choices)


@pytest.mark.parametrize("name,kind", sorted(COMMAND_KINDS.items()))
def test_every_format_choice_comes_from_the_registry(name: str, kind: str) -> None:
    assert _format_choices(name) == formats.names(kind)
    assert _format_choices(name)[0] == "table"  # one name for the terminal table, everywhere
    for fmt in formats.names(kind):  # every registered renderer exists
        module, function = formats.FORMATS[kind][fmt].renderer.split(":")
        assert callable(getattr(__import__(module, fromlist=[function]), function)), (kind, fmt)


def test_a_name_means_one_thing_and_registering_it_twice_is_refused() -> None:
    assert "rich" not in {name for kind in formats.FORMATS for name in formats.names(kind)}
    with pytest.raises(ValueError, match="registered twice"):
        formats.register("advice", "json", "rooflinectl.outputs.advice_render:render_json", "again")
    assert formats.names("unknown") == formats.names("profile")  # show --unknown offers what show offers


def test_the_extension_chooses_the_format(tmp_path: Path) -> None:
    csv, js, md, xml = (tmp_path / n for n in ("t.csv", "t.json", "a.md", "a.xml"))
    assert _run("show", MLP, "-o", csv).exit_code == 0
    assert csv.read_text().startswith("kernel,op,")
    assert _run("show", MLP, "-o", js).exit_code == 0 and json.loads(js.read_text())["kernels"]
    assert _run("advise", NAIVE, "-o", md).exit_code == 0
    assert md.read_text().startswith("## rooflinectl advice")
    assert _run("advise", NAIVE, "-o", xml).exit_code == 0
    assert ET.fromstring(xml.read_text().split("\n", 1)[1]).tag == "testsuites"
    diff_xml = tmp_path / "d.xml"
    assert _run("diff", NAIVE, SDPA, "-o", diff_xml).exit_code == 0 and "<testsuites" in diff_xml.read_text()
    ceilings = tmp_path / "c.json"
    assert _run("ceilings", "--device", "cpu", "-o", ceilings).exit_code == 0
    assert "compute_flops_per_s" in ceilings.read_text()
    table = tmp_path / "t.md"  # show writes no markdown: the extension says nothing, the table is written
    assert _run("show", MLP, "-o", table).exit_code == 0 and "share" in table.read_text()


@pytest.mark.parametrize("args", [["show", MLP, "--format", "json", "-o", "x.csv"],
                                  ["advise", NAIVE, "--format", "markdown", "-o", "x.json"],
                                  ["diff", NAIVE, SDPA, "--format", "github", "-o", "x.xml"]])
def test_a_format_the_extension_contradicts_is_one_sentence(args: list[object], tmp_path: Path) -> None:
    args = [tmp_path / a if str(a).startswith("x.") else a for a in args]
    result = _run(*args)
    assert result.exit_code == EXIT_USAGE and "contradicts -o" in result.output, result.output
    assert len(result.output.strip().splitlines()) == 1 and not Path(args[-1]).exists()


def test_an_html_output_points_at_report(tmp_path: Path) -> None:
    result = _run("show", MLP, "-o", tmp_path / "r.html")
    assert result.exit_code == EXIT_USAGE and "rooflinectl report -o" in result.output
    with pytest.raises(UsageError):
        formats.chosen_format("advice", None, "x.htm")


def _body_rows(text: str) -> int:
    """Rows of show's kernel table: the lines after its header rule that start with a share."""
    body = text.split("─\n", 1)[1]
    return len([line for line in body.splitlines() if re.match(r"\s*[\d.]+% ", line)])


def test_top_and_all_everywhere_and_the_count_is_said() -> None:
    groups = len(load_profile(MLP).kernels)
    three = _run("show", MLP, "--top", "3", "--wide")
    assert _body_rows(three.output) == 3
    assert f"3 of {groups} groups shown; {groups - 3} more hold" in three.output
    every = _run("show", MLP, "--all", "--wide")
    assert _body_rows(every.output) == groups and "groups shown" not in every.output
    diff = _run("diff", NAIVE, SDPA, "--top", "1")
    matched = int(re.search(r"(\d+) matched", diff.output).group(1))
    assert matched > 1 and f"1 of {matched} matched groups shown" in diff.output
    assert "groups shown" not in _run("diff", NAIVE, SDPA, "--all").output
    for name in ("show", "diff", "validate", "profile", "analyse", "plot", "advise"):
        command = main.get_command(click.Context(main), name)
        assert {"--top", "--all"} <= {o for p in command.params for o in p.opts}, name


def test_advise_top_limits_the_findings_and_counts_them_all() -> None:
    default = json.loads(_run("advise", NAIVE, "--format", "json").output)
    total = default["counts"]["findings"]
    assert total >= 2 and default["counts"]["shown"] == total
    one = _run("advise", NAIVE, "--top", "1", "--format", "markdown")
    assert re.search(rf"\b{total} finding\\\(s\\\).*, 1 shown", one.output), one.output
    limited = json.loads(_run("advise", NAIVE, "--top", "1", "--format", "json").output)
    assert len(limited["findings"]) == 1 and limited["counts"]["findings"] == total
    every = json.loads(_run("advise", NAIVE, "--all", "--format", "json").output)
    assert every == json.loads(_run("advise", NAIVE, "--top", "0", "--format", "json").output)
    assert every["counts"]["findings"] == total + default["hidden"]  # --all: the small ones too


def test_show_sort_and_filter_are_plots() -> None:
    data = load_profile(MLP)
    rows = json.loads(_run("show", MLP, "--sort", "efficiency", "--format", "json").output)["kernels"]
    efficiencies = [r["efficiency"] for r in rows if r["efficiency"] is not None]
    assert efficiencies == sorted(efficiencies) and len(set(efficiencies)) > 1
    shown = json.loads(_run("show", MLP, "--filter", "mm", "--format", "json").output)["kernels"]
    expected = filter_groups(data.kernels, "mm")
    assert 0 < len(shown) == len(expected) < len(data.kernels)
    said = _run("show", MLP, "--filter", "mm")
    assert f"--filter 'mm': {len(expected)} of {len(data.kernels)} groups" in said.output  # nothing hidden unsaid
    assert {r["kernel"] for r in shown} == set(expected["kernel"])
    from rooflinectl.outputs.plot import filter_table

    assert filter_table is filter_groups  # plot --filter is the same code
    nothing = _run("show", MLP, "--filter", "nomatch")
    assert nothing.exit_code == EXIT_USAGE and "matches no group" in nothing.output


def test_sort_keys_order_largest_first_and_efficiency_lowest_first() -> None:
    table = pd.DataFrame({"time_s": [1.0, 3.0, 2.0], "flops": [5.0, 1.0, float("nan")],
                          "efficiency": [0.9, 0.1, 0.5]})
    assert list(sort_groups(table, "time")["time_s"]) == [3.0, 2.0, 1.0]
    assert list(sort_groups(table, "flops")["time_s"]) == [1.0, 3.0, 2.0]  # missing last
    assert list(sort_groups(table, "efficiency")["efficiency"]) == [0.1, 0.5, 0.9]


@pytest.fixture()
def four_iterations(tmp_path: Path) -> Path:
    """The MLP profile said to cover 4 iterations: every view divides its totals by 4."""
    document = json.loads(MLP.read_text())
    document["summary"]["iterations"] = 4
    path = tmp_path / "four.profile.json"
    path.write_text(json.dumps(document))
    return path


def test_per_iteration_numbers_agree_across_show_plot_and_terminal(four_iterations: Path) -> None:
    from rooflinectl.outputs.plot import plot_profile

    data = load_profile(four_iterations)
    ranked = data.kernels.sort_values("time_s", ascending=False, ignore_index=True).head(8)
    assert (ranked["time_s"] / 4 < 1e-3).any() and (ranked["time_s"] / 4 >= 1e-3).any()  # ms and us rows
    show = _run("show", four_iterations, "--wide", "--top", "8")
    header = next(line for line in show.output.splitlines() if line.startswith("share"))
    show_rows = show.output.split("─\n", 1)[1].splitlines()[:8]
    terminal = _run("plot", four_iterations, "--terminal", "--top", "8", env={"COLUMNS": "140"})
    figure = plot_profile(data, top=8)
    texts = {t.get_gid(): t.get_text() for t in figure.findobj(lambda a: hasattr(a, "get_gid") and a.get_gid())
             if hasattr(t, "get_text")}
    assert "time/it" in header and "time/it" in terminal.output and "time/it" in texts["table:header"]
    assert "per iteration (4 iterations)" in texts["subtitle"]
    for rank, row in enumerate(ranked.itertuples(), 1):
        per_iteration = seconds(row.time_s / 4)  # independent of every view
        share = f"{100 * row.time_share:.1f}%"
        key_row = next(line for line in terminal.output.splitlines() if re.match(rf"\s*{rank}\s+[\d.]+%", line))
        for view in (show_rows[rank - 1], key_row, texts[f"table:row:{rank}"]):
            assert per_iteration in view and share in view, (rank, view, per_iteration)


def test_csv_and_json_carry_totals_and_the_iterations(four_iterations: Path) -> None:
    data = load_profile(four_iterations)
    frame = pd.read_csv(pd.io.common.StringIO(_run("show", four_iterations, "--format", "csv", "--all").output))
    assert set(frame["iterations"]) == {4}
    assert frame["time_s"].sum() == pytest.approx(data.kernels["time_s"].sum())  # totals, not per iteration
    rows = json.loads(_run("show", four_iterations, "--format", "json").output)["kernels"]
    assert {r["iterations"] for r in rows} == {4}
    advice = json.loads(_run("advise", four_iterations, "--format", "json").output)
    assert advice["iterations"] == 4
    assert advice["run_time_s"] == pytest.approx(data.kernels["time_s"].sum())  # advice times are totals...
    assert "totals over 4 profiled iterations" in _run("advise", four_iterations).output  # ...and say so
    assert "profiled iterations" not in _run("advise", MLP).output


# What outputs/ may take from analysis/: the types it renders, the JSON helper, the row selection
# --filter asked for, and the CI verdict rule (so a report's verdict is the command's exit code).
# Anything that computes a figure is computed before the renderer is called (issue 33).
RENDER_IMPORTS = {"AdviceReport", "Finding", "DiffReport", "GroupChange", "GroupMatch", "ChartModel", "ClockStrip",
                  "Comparison", "json_ready", "severity_rank", "exit_code", "filter_groups"}


def test_outputs_take_only_types_and_helpers_from_analysis() -> None:
    import ast

    import rooflinectl.outputs

    found: dict[str, set[str]] = {}
    for path in Path(rooflinectl.outputs.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("rooflinectl.analysis"):
                found.setdefault(path.name, set()).update(alias.name for alias in node.names)
            elif isinstance(node, ast.Import):
                assert not any(a.name.startswith("rooflinectl.analysis") for a in node.names), path.name
    computing = {name: names - RENDER_IMPORTS for name, names in found.items() if names - RENDER_IMPORTS}
    assert computing == {}, computing
    assert "plot_compare.py" in found and "plot_clocks.py" in found  # the check sees the chart modules
