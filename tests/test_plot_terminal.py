"""The terminal roofline (rich), rendered into a string console: roofs, top points, the key."""

from __future__ import annotations

import io

import pandas as pd
from rich.console import Console
from test_plot_helpers import make_profile

from rooflinectl.outputs.plot_terminal import render_terminal


def _render(top: int = 10) -> str:
    console = Console(file=io.StringIO(), width=100, color_system=None)
    console.print(render_terminal(make_profile(), width=100, height=22, top=top))
    return console.file.getvalue()


def test_terminal_shows_roofs_points_and_key() -> None:
    out = _render()
    lines = out.splitlines()
    grid = [line.split("│", 1)[1] for line in lines if "│" in line]
    assert len(grid) == 22
    assert any("/" in row for row in grid) and any("─" in row for row in grid)
    plotted = "".join(grid)
    for symbol in "1235678A":  # the top 10, less the two of unknown cost (4 and 9)
        assert symbol in plotted, symbol
    assert "4" not in plotted.replace("─", "")
    assert "DRAM 4.8 TB/s (spec)" in out and "bf16 tensor 989 TFLOP/s (spec)" in out
    assert "no cost (not drawn)" in out and "mm · fc1" in out
    assert "1 PFLOP/s" in out and "FLOP/byte" in out


def test_terminal_top_limits_the_points() -> None:
    grid = "".join(line.split("│", 1)[1] for line in _render(top=3).splitlines() if "│" in line)
    assert "1" in grid and "3" in grid and "5" not in grid


def test_groups_in_one_cell_are_listed() -> None:
    data = make_profile()
    first = data.kernels.sort_values("time_s", ascending=False).index[0]
    twin = data.kernels.loc[[first]].copy()
    twin["time_s"] = twin["time_s"] * 0.999  # same intensity and rate: same cell, ranked second
    data.kernels = pd.concat([data.kernels, twin], ignore_index=True)
    console = Console(file=io.StringIO(), width=100, color_system=None)
    console.print(render_terminal(data, width=100, height=22, top=10))
    assert "1 also stands for 2 (same cell)" in console.file.getvalue()
