"""Issue 35: a misspelt option is not forwarded to the script (cli/script_args.py), and replacing
the default profile keeps the one it replaces (outputs/profile_previous.py), which `diff` with no
arguments compares."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rooflinectl.cli.main import main
from rooflinectl.errors import EXIT_USAGE
from rooflinectl.outputs.profile_file import load_profile
from rooflinectl.outputs.profile_previous import PREVIOUS_PROFILE_PATH
from rooflinectl.schema import DEFAULT_PROFILE_PATH

DATA = Path(__file__).parent / "data"
CAPTURE = DATA / "h200_mlp_bf16.capture.json.gz"
ATTENTION = DATA / "h200_attention_naive_bf16.capture.json.gz"
ARGV_SCRIPT = ("import json, sys, torch\n"
               "json.dump(sys.argv[1:], open(sys.argv[0] + '.argv', 'w'))\n"
               "torch.ones(4) + 1\n")


def _run(*args: object):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.mark.parametrize("typo,meant", [("--wramup", "--warmup"), ("--wramup=3", "--warmup"), ("--itres", "--iters"),
                                        ("--devcie", "--device")])
def test_an_unknown_option_before_the_script_is_a_typo(tmp_path: Path, typo: str, meant: str) -> None:
    script = tmp_path / "s.py"
    script.write_text(ARGV_SCRIPT)
    result = _run("profile", typo, *(["3"] if "=" not in typo else []), script, "-o", tmp_path / "p.json")
    assert result.exit_code == EXIT_USAGE, result.output
    message = result.output.strip()
    assert f"did you mean {meant}?" in message and "after `--`" in message, message
    assert len(message.splitlines()) == 1 and "Traceback" not in message
    assert not Path(f"{script}.argv").exists() and not (tmp_path / "p.json").exists()  # nothing ran


def test_an_unknown_option_before_dashes_is_a_typo_even_after_the_script(tmp_path: Path) -> None:
    script = tmp_path / "s.py"
    script.write_text(ARGV_SCRIPT)
    result = _run("profile", "-q", script, "--wramup", "3", "--", "--batch", "2")
    assert result.exit_code == EXIT_USAGE and "did you mean --warmup?" in result.output, result.output
    assert not Path(f"{script}.argv").exists()


def test_an_option_like_nothing_known_says_so_without_a_guess(tmp_path: Path) -> None:
    result = _run("profile", "--zzzz", tmp_path / "s.py")
    assert result.exit_code == EXIT_USAGE and "no option --zzzz;" in result.output and "did you mean" not in result.output


def test_arguments_after_the_script_go_to_it_unchanged(tmp_path: Path) -> None:
    script = tmp_path / "s.py"
    script.write_text(ARGV_SCRIPT)
    out = tmp_path / "p.json"
    result = _run("profile", "--device", "cpu", "-q", "-o", out, "--iterations", "none", script,
                  "--wramup", "3", "--batch=2", "x")
    assert result.exit_code == 0, result.output
    assert json.loads(Path(f"{script}.argv").read_text()) == ["--wramup", "3", "--batch=2", "x"]
    # the script gets it; the user hears where rooflinectl's own option would have gone
    assert "--wramup goes to the script; if it is rooflinectl's --warmup" in result.output
    after = _run("profile", "--device", "cpu", "-qo", out, "--iterations", "none", "--", script, "--wramup", "3")
    assert after.exit_code == 0, after.output  # after `--`: the script's, by intent, and nothing said
    assert json.loads(Path(f"{script}.argv").read_text()) == ["--wramup", "3"] and "goes to the script" not in after.output


def test_replacing_the_default_profile_keeps_the_previous(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    nothing = _run("diff")
    assert nothing.exit_code == EXIT_USAGE and PREVIOUS_PROFILE_PATH in nothing.output
    assert _run("analyse", CAPTURE, "-q").exit_code == 0
    assert not Path(PREVIOUS_PROFILE_PATH).exists()  # nothing was replaced
    first = Path(DEFAULT_PROFILE_PATH).read_text()
    second = _run("analyse", ATTENTION, "-q")
    assert second.exit_code == 0 and f"the previous one: {PREVIOUS_PROFILE_PATH}" in second.output
    assert Path(PREVIOUS_PROFILE_PATH).read_text() == first  # the first run's profile, whole
    assert Path(DEFAULT_PROFILE_PATH).read_text() != first
    compared = _run("diff", "--format", "json")
    assert compared.exit_code == 0, compared.output
    report = json.loads(compared.output)
    base, new = load_profile(PREVIOUS_PROFILE_PATH), load_profile(DEFAULT_PROFILE_PATH)
    assert report["base_kernel_s"] == pytest.approx(base.kernels["time_s"].sum() / max(1, base.summary.get("iterations") or 1))
    assert report["new_kernel_s"] == pytest.approx(new.kernels["time_s"].sum() / max(1, new.summary.get("iterations") or 1))


def test_a_profile_of_the_users_own_name_is_replaced_as_asked(tmp_path: Path) -> None:
    out = tmp_path / "mine.json"
    assert _run("analyse", CAPTURE, "-q", "-o", out).exit_code == 0
    assert _run("analyse", ATTENTION, "-q", "-o", out).exit_code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.json"]
