"""One set of conventions across the commands, and a table that fits the terminal (issue 16,
newcomer list): `table` everywhere, `-o` (and `-o -`) on show/advise/diff, `--top 0` is all,
diff in github and junit, plot's edge cases, show --by module with a module column."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.cells import cell_len

from rooflinectl.cli.main import main
from rooflinectl.errors import EXIT_USAGE
from rooflinectl.outputs.profile_file import load_profile

DATA = Path(__file__).parent / "data"
MLP = DATA / "h200_mlp.profile.json"
NAIVE, SDPA = DATA / "h200_attention_naive.profile.json", DATA / "h200_attention_sdpa.profile.json"


def _run(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(main, [str(a) for a in args], env=env)


@pytest.mark.parametrize("columns", [80, 100, 120])
def test_show_fits_the_terminal(columns: int) -> None:
    result = _run("show", MLP, env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert max(cell_len(line) for line in lines) <= columns
    header = next(line for line in lines if line.startswith("share"))
    for name in ("share", "time", "eff", "bound", "kernel", "op · shapes"):
        assert name in header  # what matters most stays
    assert "nvjet_sm90" in result.output and "aten::mm" in result.output
    if columns >= 120:
        assert "attainable" in header


def test_show_wide_has_every_column() -> None:
    result = _run("show", MLP, "--wide", env={"COLUMNS": "80"})
    header = next(line for line in result.output.splitlines() if line.startswith("share"))
    assert all(name in header for name in ("calls", "FLOPs", "bytes", "AI", "FLOP/s", "B/s", "attainable", "prec"))


@pytest.fixture(scope="module")
def training_profile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two identical layers, backward and an AdamW step, profiled on CPU through the CLI."""
    folder = tmp_path_factory.mktemp("train")
    (folder / "train.py").write_text(
        "import torch\n"
        "class Net(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.layers = torch.nn.ModuleList(torch.nn.Linear(64, 64) for _ in range(2))\n"
        "    def forward(self, x):\n"
        "        for layer in self.layers:\n"
        "            x = torch.relu(layer(x))\n"
        "        return x\n"
        "model = Net()\n"
        "opt = torch.optim.AdamW(model.parameters(), foreach=False)\n"
        "x = torch.randn(32, 64)\n"
        "for _ in range(2):\n"
        "    model(x).sum().backward()\n"
        "    opt.step()\n"
        "    opt.zero_grad()\n")
    out = folder / "train.json"
    result = _run("profile", folder / "train.py", "-o", out, "-q", "--device", "cpu", "--iterations", "none")
    assert result.exit_code == 0, result.output
    return out


def test_show_by_module(training_profile: Path) -> None:
    data = load_profile(training_profile)
    modules = set(data.kernels["module"])
    # repeated layers stay apart (were merged into their common prefix "Net.layers")
    assert {"Net.layers.0", "Net.layers.1"} <= modules and "Net.layers" not in modules
    # backward and optimizer work have a module too (was '' for most of a training step)
    assert {"Net.layers.0 (backward)", "Net.layers.1 (backward)", "optimizer AdamW.step"} <= modules
    unnamed = data.kernels.loc[data.kernels["module"] == "", "time_s"].sum() / data.kernels["time_s"].sum()
    assert unnamed < 0.2
    result = _run("show", training_profile, "--by", "module", "--top", "0", env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    header = next(line for line in result.output.splitlines() if line.startswith("share"))
    assert "module" in header
    assert "Net.layers.1 (backward)" in result.output and "optimizer AdamW.step" in result.output
    by_kernel = json.loads(_run("show", training_profile, "--format", "json").output)["kernels"]
    addmm = [r for r in by_kernel if r["op"] == "aten::addmm"]
    assert len(addmm) == 1 and addmm[0]["calls"] == 4 and addmm[0]["module"] == "Net.layers"  # summed for show


def test_top_zero_is_all(training_profile: Path) -> None:
    rows = len(load_profile(training_profile).kernels.drop_duplicates(["kernel", "op", "shapes", "dtype"]))
    shown = _run("show", training_profile, "--top", "0", "--wide")
    body = shown.output.split("─\n", 1)[1] if "─\n" in shown.output else shown.output
    assert shown.exit_code == 0 and len([line for line in body.splitlines() if "%" in line]) == rows
    groups = len(load_profile(NAIVE).kernels.drop_duplicates(["kernel", "op", "shapes", "dtype"]))
    everything, one = _run("diff", NAIVE, SDPA, "--top", "0"), _run("diff", NAIVE, SDPA, "--top", "1")
    assert everything.exit_code == one.exit_code == 0
    matched = int(re.search(r"(\d+) matched, (\d+) new, (\d+) vanished", everything.output).group(1))
    assert _table_rows(everything.output) == matched > _table_rows(one.output) == 1
    chart = _run("plot", NAIVE, "--top", "0", "--terminal")
    assert chart.exit_code == 0
    assert len(re.findall(r"^ *\d+ +[\d.]+% ", chart.output, re.M)) == groups  # every group in the side table


def _table_rows(text: str) -> int:
    """Body rows of a rich table (between its header rule and its bottom border); a row's
    continuation lines (its group on several lines) have an empty second cell."""
    body = text.split("┡", 1)[1].split("└", 1)[0] if "┡" in text else ""
    return len([line for line in body.splitlines() if line.startswith("│") and line.split("│")[2].strip()])


def test_one_format_name_and_stdout_dash(tmp_path: Path) -> None:
    for args in (["advise", NAIVE], ["diff", NAIVE, SDPA], ["show", NAIVE]):
        assert _run(*args, "--format", "table").exit_code == 0
    for args in (["advise", NAIVE], ["diff", NAIVE, SDPA], ["show", NAIVE], ["ceilings"], ["validate", NAIVE]):
        retired = _run(*args, "--format", "rich")  # one name per format, everywhere: `rich` became `table`
        assert retired.exit_code == EXIT_USAGE and "'rich' is now called 'table'" in retired.output, retired.output
    for args in (["advise", NAIVE, "--format", "json"], ["diff", NAIVE, SDPA, "--format", "json"],
                 ["show", NAIVE, "--format", "json"]):
        out = _run(*args, "-o", "-")
        assert out.exit_code == 0 and json.loads(out.output)
        assert not Path("-").exists()
        written = tmp_path / f"{args[0]}.json"
        assert _run(*args, "-o", written).exit_code == 0 and json.loads(written.read_text())
    table = tmp_path / "show.txt"
    assert _run("show", NAIVE, "-o", table).exit_code == 0 and "share" in table.read_text()


def test_diff_github_and_junit() -> None:
    gh = _run("diff", SDPA, NAIVE, "--format", "github", "--fail-on-regression", "5")
    assert gh.exit_code == 1
    assert any(line.startswith("::error title=rooflinectl diff%3A regression::") for line in gh.output.splitlines())
    junit = _run("diff", SDPA, NAIVE, "--format", "junit", "--fail-on-regression", "5")
    assert junit.exit_code == 1
    root = ET.fromstring(junit.output.split("\n", 1)[1])
    assert int(root.get("failures")) >= 1 and root.find(".//testcase[@name='total window']") is not None
    ok = _run("diff", NAIVE, NAIVE, "--format", "junit", "--fail-on-regression", "5")
    assert ok.exit_code == 0 and ET.fromstring(ok.output.split("\n", 1)[1]).get("failures") == "0"


def test_plot_edges(tmp_path: Path) -> None:
    both = _run("plot", NAIVE, SDPA, "--terminal")
    assert both.exit_code == 0 and "h200_attention_naive" in both.output and "h200_attention_sdpa" in both.output
    dpi = _run("plot", MLP, "--dpi", "0", "-o", tmp_path / "x.png")
    assert dpi.exit_code == EXIT_USAGE and "--dpi must be" in dpi.output and "Traceback" not in dpi.output
    nothing = _run("plot", MLP, "--filter", "nomatch", "-o", tmp_path / "y.png")
    assert nothing.exit_code == EXIT_USAGE and "matches no group" in nothing.output
    assert not (tmp_path / "y.png").exists()


def test_summary_counts_region_runs(tmp_path: Path) -> None:
    script = tmp_path / "r.py"
    script.write_text("import torch, rooflinectl\nx = torch.randn(32, 32)\n"
                      "for _ in range(3):\n    with rooflinectl.region('step'):\n        x @ x\n")
    result = _run("profile", script, "-o", tmp_path / "r.json", "--device", "cpu")
    assert result.exit_code == 0, result.output
    assert "(region ran 3 times)" in result.output and "1 iteration(s)" not in result.output
    assert load_profile(tmp_path / "r.json").summary["region_runs"] == 3
