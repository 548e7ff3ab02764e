"""`rooflinectl plot` through click's CliRunner: files written, errors as one sentence and exit 2."""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from test_plot_helpers import attention_pair, make_profile

from rooflinectl.outputs.profile_file import DEFAULT_PROFILE_PATH, save_profile


def _command() -> click.Command:
    """The plot command; loaded from its file while sibling commands of the group are still missing."""
    try:
        return importlib.import_module("rooflinectl.cli.plot_cmd").command
    except ImportError:
        path = Path(__file__).parent.parent / "rooflinectl" / "cli" / "plot_cmd.py"
        spec = importlib.util.spec_from_file_location("_plot_cmd_standalone", path)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.command


@pytest.fixture()
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    save_profile(make_profile(), tmp_path / DEFAULT_PROFILE_PATH)
    naive, sdpa = attention_pair()
    save_profile(naive, tmp_path / "naive.profile.json")
    save_profile(sdpa, tmp_path / "sdpa.profile.json")
    return tmp_path


def test_default_profile_to_png(workdir: Path) -> None:
    result = CliRunner().invoke(_command(), ["-o", "roofline.png", "--top", "5", "--title", "Step"])
    assert result.exit_code == 0, result.output
    assert (workdir / "roofline.png").read_bytes()[:4] == b"\x89PNG"
    assert "wrote roofline.png" in result.output


def test_svg_with_filter_and_family_colours(workdir: Path) -> None:
    result = CliRunner().invoke(_command(), [DEFAULT_PROFILE_PATH, "-o", "out/chart.svg", "--filter", "mlp",
                                             "--color-by", "family", "--dpi", "80"])
    assert result.exit_code == 0, result.output
    svg = (workdir / "out" / "chart.svg").read_text()
    assert svg.startswith("<?xml") and "</svg>" in svg


def test_comparison(workdir: Path) -> None:
    result = CliRunner().invoke(_command(), ["naive.profile.json", "sdpa.profile.json", "-o", "cmp.pdf"])
    assert result.exit_code == 0, result.output
    assert (workdir / "cmp.pdf").read_bytes()[:5] == b"%PDF-"


def test_terminal(workdir: Path) -> None:
    result = CliRunner().invoke(_command(), ["--terminal"])
    assert result.exit_code == 0, result.output
    assert "Roofline: NVIDIA H200" in result.output and "mm · fc1" in result.output
    assert not (workdir / "roofline.png").exists()  # --terminal alone writes no file


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.profile.json"], "No profile file at missing.profile.json"),
        (["-o", "chart.jpg"], "saved as .png, .svg or .pdf"),
        (["a", "b", "c"], "one profile, or two"),
        (["--filter", "("], "not a valid regular expression"),
        (["naive.profile.json", "sdpa.profile.json", "--terminal"], "--terminal draws one profile"),
    ],
)
def test_bad_input_is_one_sentence_exit_2(workdir: Path, args: list[str], message: str) -> None:
    result = CliRunner().invoke(_command(), args)
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
    assert not list(workdir.glob("*.png")) and not list(workdir.glob(".*.tmp*"))


def test_not_a_profile(workdir: Path) -> None:
    (workdir / "junk.json").write_text("{}")
    result = CliRunner().invoke(_command(), ["junk.json"])
    assert result.exit_code == 2 and "not a rooflinectl profile" in result.output
