"""`rooflinectl --help`, `--version` and Tab completion start fast: they import no torch, pandas
or matplotlib (seconds); each subcommand imports what it needs when it runs."""

from __future__ import annotations

import json
import subprocess
import sys

import click
import pytest

from rooflinectl.cli.main import COMMANDS, main

HEAVY = ("torch", "pandas", "matplotlib", "numpy")

PROBE = """
import json, sys
from rooflinectl.cli.main import main
try:
    main({args!r}, prog_name="rooflinectl")
except SystemExit:
    pass
print(json.dumps(sorted(m for m in {heavy!r} if m in sys.modules)), file=sys.stderr)
"""


def _heavy_modules_after(args: list[str], env: dict[str, str] | None = None) -> list[str]:
    code = PROBE.format(args=args, heavy=HEAVY)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    return json.loads(done.stderr.strip().splitlines()[-1])


@pytest.mark.parametrize("args", [["--version"], ["--help"], [], ["profile", "--help"], ["kernels", "--help"],
                                  ["ceilings", "--help"]])
def test_group_options_import_nothing_heavy(args) -> None:
    assert _heavy_modules_after(args) == []


def test_completion_imports_nothing_heavy(monkeypatch) -> None:
    import os

    env = {**os.environ, "_ROOFLINECTL_COMPLETE": "bash_complete", "COMP_WORDS": "rooflinectl pro", "COMP_CWORD": "1"}
    assert _heavy_modules_after([], env) == []


def test_registry_lines_are_each_commands_own_help() -> None:
    ctx = click.Context(main)
    for name, (_, line) in COMMANDS.items():
        command = main.get_command(ctx, name)
        assert command is not None and command.name == name
        assert (command.help or "").strip().splitlines()[0] == line, name


def test_every_command_module_is_registered() -> None:
    from pathlib import Path

    import rooflinectl.cli

    modules = {p.stem for p in Path(rooflinectl.cli.__file__).parent.glob("*_cmd.py")}
    assert modules == {module for module, _ in COMMANDS.values()}


def test_completion_lists_the_commands() -> None:
    ctx = click.Context(main)
    assert [item.value for item in main.shell_complete(ctx, "p")] == ["profile", "plot"]  # workflow order
    assert "--version" in [item.value for item in main.shell_complete(ctx, "--")]


@pytest.mark.parametrize("command", [["advise"], ["show"], ["plot", "-o", "{tmp}/chart.png"]])
def test_reading_a_profile_imports_no_torch(command, tmp_path) -> None:
    """advise, show and plot read a profile file: no call is costed, so the cost formulas and
    torch (0.85 s on the 2-core machine) stay unloaded."""
    from pathlib import Path

    profile = Path(__file__).parent / "data" / "h200_attention_naive.profile.json"
    args = [part.format(tmp=tmp_path) for part in command] + [str(profile)]
    code = PROBE.format(args=args, heavy=("torch",))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert json.loads(done.stderr.strip().splitlines()[-1]) == [], done.stderr[-2000:]
    if command[0] == "plot":
        assert (tmp_path / "chart.png").stat().st_size > 0


@pytest.mark.slow
def test_the_registry_loads_its_formulas_at_first_use() -> None:
    """Importing the registry loads no formula; the first lookup loads all of them, and a formula
    registered from outside before any lookup is still refused as a duplicate of ours."""
    code = """
import sys
from rooflinectl.costs.registry import cost_formula, lookup
assert "torch" not in sys.modules and "rooflinectl.costs.gemm" not in sys.modules
try:
    cost_formula("aten::mm", family="gemm")(lambda call: None)
except ValueError as exc:
    assert "already registered" in str(exc)
else:
    raise SystemExit("a duplicate of a built-in formula was taken")
assert lookup("aten::mm").family == "gemm" and lookup("aten::convolution") is not None
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "ok", done.stderr[-2000:]
