"""Names from a profile are data (issue 16, case 11): escaped for the terminal, rich markup,
GitHub workflow commands, Markdown and Matplotlib mathtext, in every command that shows them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from rooflinectl.cli.main import main

GOOD = Path(__file__).parent / "data" / "h200_attention_naive.profile.json"
EVIL = "k\x1b]0;pwned\x07\x1b[2J[link=https://evil.example]x[/link] [/] $\\frac{$ <img src=x>\n::add-mask::secret"


@pytest.fixture()
def evil_profile(tmp_path: Path) -> Path:
    raw = json.loads(GOOD.read_text())
    columns = raw["kernels"]["columns"]
    for row in raw["kernels"]["rows"]:
        for column in ("kernel", "op", "module", "shapes"):
            row[columns.index(column)] = f"{column}:{EVIL}:{row[columns.index(column)]}"
    raw["ceilings"]["device_name"] = raw["metadata"]["device_name"] = "gpu\n::error::injected " + EVIL
    raw["summary"]["regions"] = [EVIL]
    path = tmp_path / "evil.json"
    path.write_text(json.dumps(raw))
    return path


def _run(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code in (0, 1), result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.output


def _no_control(text: str) -> None:
    assert "\x1b" not in text and "\x07" not in text


@pytest.mark.parametrize("args", [["show", "--top", "0"], ["show", "--by", "module"], ["advise"],
                                  ["plot", "--terminal"]])
def test_terminal_output(evil_profile: Path, args: list[str]) -> None:
    out = _run(*args[:1], str(evil_profile), *args[1:])
    _no_control(out)
    assert "[link=https://evil.example]" in out  # shown as text, not parsed as markup


def test_github_annotations(evil_profile: Path) -> None:
    out = _run("advise", str(evil_profile), "--format", "github")
    _no_control(out)
    for line in out.splitlines():
        if line.startswith("::"):
            assert line.startswith(("::notice ", "::warning ", "::error ")), line
            assert "::add-mask::" not in line.split("::", 2)[1]  # not in the command's own part
        assert not line.startswith(("::add-mask", "::error::injected"))


def test_markdown_and_junit(evil_profile: Path) -> None:
    md = _run("advise", str(evil_profile), "--format", "markdown")
    _no_control(md)
    assert "<img" not in md and "&lt;img" in md
    assert re.search(r"(?<!\\)\[link=", md) is None and "\\[link=" in md  # brackets escaped: \[link=
    assert re.search(r"(?<!\\)\$", md) is None  # no GitHub math
    junit = _run("advise", str(evil_profile), "--format", "junit")
    _no_control(junit)
    import xml.etree.ElementTree as ET

    ET.fromstring(junit.split("\n", 1)[1])  # well-formed XML


def test_diff_output(evil_profile: Path) -> None:
    for fmt in ("table", "markdown"):
        out = _run("diff", str(GOOD), str(evil_profile), "--format", fmt)
        _no_control(out)
        if fmt == "markdown":
            assert "<img" not in out


@pytest.mark.slow
def test_plot_with_mathtext_in_names_and_title(evil_profile: Path, tmp_path: Path) -> None:
    out = tmp_path / "c.png"
    result = CliRunner().invoke(main, ["plot", str(evil_profile), "-o", str(out), "--title", "a $\\frac{$ b"])
    assert result.exit_code == 0, result.output
    assert out.read_bytes()[:4] == b"\x89PNG"
    cmp = tmp_path / "cmp.png"
    result = CliRunner().invoke(main, ["plot", str(GOOD), str(evil_profile), "-o", str(cmp), "--title", "$x"])
    assert result.exit_code == 0, result.output


def test_no_chart_text_is_mathtext(evil_profile: Path) -> None:
    """Charts draw with mathtext off: names, the title and the --filter note (a regex ending in
    '$') are text, whatever the caller left in Matplotlib's settings."""
    from matplotlib.text import Text

    from rooflinectl.analysis.charts import compare_for_chart
    from rooflinectl.outputs.plot import plot_profile
    from rooflinectl.outputs.plot_compare import plot_comparison
    from rooflinectl.outputs.profile_file import load_profile

    data, good = load_profile(evil_profile), load_profile(GOOD)
    figures = [plot_profile(data, title="a $x$ b", filter_regex="^.*$"), plot_comparison(good, data, compare_for_chart(good, data), title="$y$")]
    for fig in figures:
        texts = [t for t in fig.findobj(Text) if t.get_text()]
        assert texts and not any(t.get_parse_math() for t in texts)
        assert any("$" in t.get_text() and "\\$" not in t.get_text() for t in texts)  # shown as it is
