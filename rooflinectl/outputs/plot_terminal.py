"""A coarse roofline drawn in characters, for SSH sessions without an image viewer.

Log-log grid of width x height cells: the DRAM roof as '/', compute roofs as '─', the top groups
as their rank digits (letters after 9), coloured by bound; a key below maps ranks to names.
"""

from __future__ import annotations

import math

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


def render_terminal(data: ProfileData, width: int = 80, height: int = 22, top: int = 10) -> RenderableType:
    """A rich renderable: the character roofline and a key of the plotted groups."""
    kernels = data.kernels.sort_values("time_s", ascending=False, ignore_index=True)
    points = place_groups(kernels)
    points["rank_by_time"] = range(1, len(points) + 1)
    bw = data.ceilings.dram().value
    lines = [r for r in roof_lines(data.ceilings, kernels) if r.kind != "achievable"]  # one roof per row of text
    frame = compute_frame(points, lines, bw)
    cols, rows = max(width - _Y_LABEL_W - 1, 20), max(height, 8)
    lx0, lx1 = math.log10(frame.x_lo), math.log10(frame.x_hi)
    ly0, ly1 = math.log10(frame.y_lo), math.log10(frame.y_hi)

    def cell(x: float, y: float) -> tuple[int, int] | None:
        if x <= 0 or y <= 0:
            return None
        c = round((math.log10(x) - lx0) / (lx1 - lx0) * (cols - 1))
        r = round((ly1 - math.log10(y)) / (ly1 - ly0) * (rows - 1))
        return (r, c) if 0 <= r < rows and 0 <= c < cols else None

    grid: list[list[tuple[str, str]]] = [[(" ", "")] * cols for _ in range(rows)]
    top_peak = max((r.value for r in lines if r.kind == "compute"), default=frame.y_hi)
    for roof in lines:
        for c in range(cols):
            x = 10 ** (lx0 + c / (cols - 1) * (lx1 - lx0))
            if roof.kind == "memory":
                if roof.key != "dram" or x * roof.value > top_peak:
                    continue
                rc, ch = cell(x, x * roof.value), "/"
            else:
                if x < roof.value / bw:
                    continue
                rc, ch = cell(x, roof.value), "─"
            if rc:
                grid[rc[0]][rc[1]] = (ch, "grey50")
    shown = points[(points["where"] == "roofline") & (points["rank_by_time"] <= min(top, len(_SYMBOLS)))]
    drawn: dict[tuple[int, int], list[str]] = {}
    for r in shown.itertuples():  # largest first: a shared cell shows the largest group; the rest are listed
        rc = cell(r.x, r.y)
        if rc:
            drawn.setdefault(rc, []).append(_SYMBOLS[r.rank_by_time - 1])
            style = "bold red" if r.above_roof else BOUND_STYLES.get(str(r.bound), "")
            if len(drawn[rc]) == 1:
                grid[rc[0]][rc[1]] = (_SYMBOLS[r.rank_by_time - 1], style)
    shared = {symbols[0]: symbols for symbols in drawn.values() if len(symbols) > 1}

    decade_rows = {round((ly1 - e) / (ly1 - ly0) * (rows - 1)): e for e in range(math.ceil(ly0), math.floor(ly1) + 1)}
    body = Text()
    for i, row in enumerate(grid):
        label = si(10.0 ** decade_rows[i], "FLOP/s") if i in decade_rows else ""
        body.append(f"{label:>{_Y_LABEL_W}}│", style="grey50")
        for ch, style in row:
            body.append(ch, style=style)
        body.append("\n")
    body.append(" " * _Y_LABEL_W + "└" + "─" * cols + "\n", style="grey50")
    ticks = [" "] * cols
    for e in range(math.ceil(lx0), math.floor(lx1) + 1):
        c = round((e - lx0) / (lx1 - lx0) * (cols - 1))
        tick = f"{10.0 ** e:g}"
        if c + len(tick) <= cols and all(t == " " for t in ticks[max(c - 1, 0): c + len(tick) + 1]):
            ticks[c: c + len(tick)] = list(tick)
    body.append(f"{'FLOP/byte':>{_Y_LABEL_W}} " + "".join(ticks) + "\n", style="grey50")

    key = Table(box=None, padding=(0, 1), show_header=True, header_style="bold")
    iterations = iterations_of(data)  # times per iteration when there are several, as `show` gives them
    for name in ("", "share", "time/it" if iterations > 1 else "time", "bound", "group"):
        key.add_column(name)
    for r in points.head(min(top, len(_SYMBOLS))).itertuples():
        where = {"unknown": "no cost (not drawn)", "no_flops": "0 FLOP (not drawn)"}.get(r.where, str(r.bound))
        style = "bold red" if r.above_roof else BOUND_STYLES.get(str(r.bound), "")
        cells = number_cells(r, iterations)  # the numbers as `show` writes them
        key.add_row(Text(_SYMBOLS[r.rank_by_time - 1], style=style), cells["share"],
                    cells["time"], where + (" ⚠ above roof" if r.above_roof else ""),
                    rich_text(group_label(r, 40)))
    roofs = Text("  ".join(("/ " if r.kind == "memory" else "─ ") + r.label for r in lines if r.key not in ("l2", "l1", "cache")),
                 style="grey50")
    overlaps = Text("".join(f"{first} also stands for {', '.join(rest[1:])} (same cell)\n"
                            for first, rest in shared.items()), style="grey50")
    return Group(Text(f"Roofline: {plain(data.ceilings.device_name)}", style="bold"), roofs, body, overlaps, key)
