"""80 columns, piped (issue 35): every line within COLUMNS, none ending in the spaces rich pads
tables with, and no shape or name cut in two by the wrap: a narrow column wraps between shapes
and cuts a long name with "…"."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.cells import cell_len

from rooflinectl.cli.main import main

DATA = Path(__file__).parent / "data"
PROFILES = sorted(DATA.glob("h200_*.profile.json"))
COMMANDS = [("--help",), ("advise", "--list-rules"), ("advise", "--explain", "launch.overhead"), ("kernels", "--list"), ("ceilings",),
            *[("show", str(p)) for p in PROFILES], *[("advise", str(p)) for p in PROFILES],
            ("diff", str(DATA / "h200_attention_naive.profile.json"), str(DATA / "h200_attention_sdpa.profile.json"))]


def _lines(*args: str) -> list[str]:
    result = CliRunner().invoke(main, list(args), env={"COLUMNS": "80"})
    assert result.exit_code in (0, 1), result.output
    return result.output.splitlines()


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(Path(x).name for x in a))
def test_fits_80_columns_without_trailing_spaces(args: tuple[str, ...]) -> None:
    lines = _lines(*args)
    assert lines
    too_wide = [line for line in lines if cell_len(line) > 80]
    assert not too_wide, "\n".join(too_wide)
    padded = [line for line in lines if line != line.rstrip()]
    assert not padded, "\n".join(repr(line) for line in padded)


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_show_wraps_between_shapes(profile: Path) -> None:
    """Each table line holds whole shapes ([...] balanced), and no op name is folded onto the next
    line (a continuation line starts with a shape, `x` or `·`, never the rest of a name)."""
    lines = _lines("show", str(profile), "--top", "0")
    start = next(i for i, line in enumerate(lines) if line.startswith("share"))
    column = lines[start].index("op · shapes")
    cells = [line[column:] for line in lines[start + 2:] if line.strip()]
    assert len(cells) > 3
    for cell in cells:
        assert cell.count("[") == cell.count("]"), cell
    continued = [line for line in lines[start + 2:] if line[:column].strip() == "" and line.strip()]
    for line in continued:
        assert re.match(r"(\[|x\b|·|\()", line[column:]), line


def test_rules_list_wraps_to_the_width() -> None:
    from rooflinectl.cli.advise_cmd import rules_help

    text = rules_help(60)
    assert max(len(line) for line in text.splitlines()) <= 60
    assert "fusion" in text and "Estimate:" in text
    # every word of every rule's description survives the wrap
    from rooflinectl.analysis.advice import RULES

    words = " ".join(text.split())
    for entry in RULES.values():
        assert " ".join(entry.doc.split()) in words


def test_diff_group_cells_keep_shapes_whole_and_the_module_end() -> None:
    lines = _lines("diff", str(DATA / "h200_attention_naive.profile.json"), str(DATA / "h200_attention_sdpa.profile.json"))
    cells = [line.split("│")[1] for line in lines if line.startswith("│")]
    assert len(cells) > 6
    for cell in cells:
        assert cell.count("[") == cell.count("]"), cell
    modules = [c.strip() for c in cells if c.strip().startswith("@ ")]
    assert modules and all(not m.endswith("…") for m in modules)  # cut from the left, if at all


def test_top_level_help_lists_whole_descriptions_in_workflow_order() -> None:
    lines = _lines("--help")
    commands = lines[lines.index("Commands:") + 1:]
    names = [line.split()[0] for line in commands if line.strip()]
    assert names[:6] == ["profile", "analyse", "show", "plot", "advise", "diff"]
    from rooflinectl.cli.main import COMMANDS

    for line in commands:
        name = line.split()[0]
        assert line.split(None, 1)[1].strip() == COMMANDS[name][1].strip(), line  # whole, not cut with "..."
