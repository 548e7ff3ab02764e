"""A coarse roofline drawn in characters, for SSH sessions without an image viewer.

Log-log grid of width x height cells: the DRAM roof as '/', compute roofs as '─', the top groups
as their rank digits (letters after 9), coloured by bound; a key below maps ranks to names.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from rooflinectl.outputs.escape import plain, rich_text
from rooflinectl.outputs.plot_names import group_label
from rooflinectl.outputs.plot_roofs import (
    compute_frame,
    place_groups,
    roof_lines,
)
from rooflinectl.outputs.table import number_cells
from rooflinectl.profile_model import ProfileData, iterations_of
from rooflinectl.units import si

BOUND_STYLES = {"memory": "bold blue", "compute": "bold dark_orange", "latency": "bold magenta", "unknown": "dim"}
_SYMBOLS = "123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_Y_LABEL_W = 12


@dataclass(frozen=True)
class _Canvas:
    """The character grid's log-log frame: columns, rows, and the decades they span."""

    cols: int
    rows: int
    lx: tuple[float, float]
    ly: tuple[float, float]

    def cell(self, x: float, y: float) -> tuple[int, int] | None:
        """The (row, column) of a point, or None outside the grid."""
        if x <= 0 or y <= 0:
            return None
        c = round((math.log10(x) - self.lx[0]) / (self.lx[1] - self.lx[0]) * (self.cols - 1))
        r = round((self.ly[1] - math.log10(y)) / (self.ly[1] - self.ly[0]) * (self.rows - 1))
        return (r, c) if 0 <= r < self.rows and 0 <= c < self.cols else None

    def x_at(self, c: int) -> float:
        return 10 ** (self.lx[0] + c / (self.cols - 1) * (self.lx[1] - self.lx[0]))


def render_terminal(data: ProfileData, width: int = 80, height: int = 22, top: int = 10) -> RenderableType:
    """A rich renderable: the character roofline and a key of the plotted groups."""
    kernels = data.kernels.sort_values("time_s", ascending=False, ignore_index=True)
    points = place_groups(kernels)
    points["rank_by_time"] = range(1, len(points) + 1)
    bw = data.ceilings.dram().value
    lines = [r for r in roof_lines(data.ceilings, kernels) if r.kind != "achievable"]  # one roof per row of text
    frame = compute_frame(points, lines, bw)
    canvas = _Canvas(max(width - _Y_LABEL_W - 1, 20), max(height, 8), (math.log10(frame.x_lo), math.log10(frame.x_hi)),
                     (math.log10(frame.y_lo), math.log10(frame.y_hi)))
    grid: list[list[tuple[str, str]]] = [[(" ", "")] * canvas.cols for _ in range(canvas.rows)]
    _draw_roofs(grid, canvas, lines, bw, max((r.value for r in lines if r.kind == "compute"), default=frame.y_hi))
    shared = _draw_points(grid, canvas, points[(points["where"] == "roofline")
                                              & (points["rank_by_time"] <= min(top, len(_SYMBOLS)))])
    roofs = Text("  ".join(("/ " if r.kind == "memory" else "─ ") + r.label for r in lines if r.key not in ("l2", "l1", "cache")),
                 style="grey50")
    overlaps = Text("".join(f"{first} also stands for {', '.join(rest[1:])} (same cell)\n"
                            for first, rest in shared.items()), style="grey50")
    return Group(Text(f"Roofline: {plain(data.ceilings.device_name)}", style="bold"), roofs, _body(grid, canvas),
                 overlaps, _key(points, top, iterations_of(data)))


def _draw_roofs(grid: list[list[tuple[str, str]]], canvas: _Canvas, lines: list, bw: float, top_peak: float) -> None:
    """The DRAM roof as '/', up to the highest compute roof; each compute roof as '─' from its ridge."""
    for roof in lines:
        for c in range(canvas.cols):
            x = canvas.x_at(c)
            if roof.kind == "memory":
                if roof.key != "dram" or x * roof.value > top_peak:
                    continue
                rc, ch = canvas.cell(x, x * roof.value), "/"
            else:
                if x < roof.value / bw:
                    continue
                rc, ch = canvas.cell(x, roof.value), "─"
            if rc:
                grid[rc[0]][rc[1]] = (ch, "grey50")


def _draw_points(grid: list[list[tuple[str, str]]], canvas: _Canvas, shown: Any) -> dict[str, list[str]]:
    """Each group as its rank symbol, largest first: a shared cell shows the largest group; returns
    {symbol shown: every symbol in its cell} for the cells several groups share."""
    drawn: dict[tuple[int, int], list[str]] = {}
    for r in shown.itertuples():
        rc = canvas.cell(r.x, r.y)
        if rc:
            drawn.setdefault(rc, []).append(_SYMBOLS[r.rank_by_time - 1])
            style = "bold red" if r.above_roof else BOUND_STYLES.get(str(r.bound), "")
            if len(drawn[rc]) == 1:
                grid[rc[0]][rc[1]] = (_SYMBOLS[r.rank_by_time - 1], style)
    return {symbols[0]: symbols for symbols in drawn.values() if len(symbols) > 1}


def _body(grid: list[list[tuple[str, str]]], canvas: _Canvas) -> Text:
    """The grid with its axes: FLOP/s decades on the left, FLOP/byte decades underneath."""
    (lx0, lx1), (ly0, ly1) = canvas.lx, canvas.ly
    decade_rows = {round((ly1 - e) / (ly1 - ly0) * (canvas.rows - 1)): e
                   for e in range(math.ceil(ly0), math.floor(ly1) + 1)}
    body = Text()
    for i, row in enumerate(grid):
        label = si(10.0 ** decade_rows[i], "FLOP/s") if i in decade_rows else ""
        body.append(f"{label:>{_Y_LABEL_W}}│", style="grey50")
        for ch, style in row:
            body.append(ch, style=style)
        body.append("\n")
    body.append(" " * _Y_LABEL_W + "└" + "─" * canvas.cols + "\n", style="grey50")
    ticks = [" "] * canvas.cols
    for e in range(math.ceil(lx0), math.floor(lx1) + 1):
        c = round((e - lx0) / (lx1 - lx0) * (canvas.cols - 1))
        tick = f"{10.0 ** e:g}"
        if c + len(tick) <= canvas.cols and all(t == " " for t in ticks[max(c - 1, 0): c + len(tick) + 1]):
            ticks[c: c + len(tick)] = list(tick)
    body.append(f"{'FLOP/byte':>{_Y_LABEL_W}} " + "".join(ticks) + "\n", style="grey50")
    return body


def _key(points: Any, top: int, iterations: float) -> Table:
    """The groups the symbols stand for, with show's numbers (per iteration when there are several)."""
    key = Table(box=None, padding=(0, 1), show_header=True, header_style="bold")
    for name in ("", "share", "time/it" if iterations > 1 else "time", "bound", "group"):
        key.add_column(name)
    for r in points.head(min(top, len(_SYMBOLS))).itertuples():
        where = {"unknown": "no cost (not drawn)", "no_flops": "0 FLOP (not drawn)"}.get(r.where, str(r.bound))
        style = "bold red" if r.above_roof else BOUND_STYLES.get(str(r.bound), "")
        cells = number_cells(r, iterations)  # the numbers as `show` writes them
        key.add_row(Text(_SYMBOLS[r.rank_by_time - 1], style=style), cells["share"],
                    cells["time"], where + (" ⚠ above roof" if r.above_roof else ""),
                    rich_text(group_label(r, 40)))
    return key
