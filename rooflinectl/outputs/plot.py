"""The roofline chart of one profile: what dominates the time and what bounds it, at a glance.

Built on `matplotlib.figure.Figure` with an Agg canvas (no pyplot, no global state), so it works
headless and in tests. A figure is fixed-size with hand-placed axes: the label layout measured
on it is the layout that gets saved.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import matplotlib
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure, SubFigure
from matplotlib.lines import Line2D
from matplotlib.text import Text

from rooflinectl.analysis.charts import ChartModel
from rooflinectl.analysis.selection import filter_groups
from rooflinectl.atomic import atomic_file
from rooflinectl.errors import UsageError
from rooflinectl.outputs.escape import plain
from rooflinectl.outputs.plot_clocks import draw_clock_strip
from rooflinectl.outputs.plot_layout import (
    LabelSpec,
    coincident_groups,
    fitted_list,
    marker_boxes,
    place_labels,
)
from rooflinectl.outputs.plot_link import draw_link_panel, link_rows
from rooflinectl.outputs.plot_names import group_label, op_at_module, shorten_kernel_name
from rooflinectl.outputs.plot_roofs import (
    compute_frame,
    draw_roofs,
    place_groups,
    roof_lines,
    setup_axes,
)
from rooflinectl.outputs.table import number_cells
from rooflinectl.profile_model import ProfileData, iterations_of
from rooflinectl.units import seconds

SUPPORTED_EXTENSIONS = {".png": "png", ".svg": "svg", ".pdf": "pdf"}
BOUND_COLORS = {"memory": "#1f77b4", "compute": "#ff7f0e", "latency": "#9467bd", "unknown": "#8c8c8c"}
FAMILY_PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#17becf", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                  "#bcbd22", "#393b79", "#637939"]
PRECISION_MARKERS = {"bf16": "o", "fp16": "s", "fp32": "^", "tf32": "D", "fp8": "P", "fp64": "v", "int8": "X"}
OTHER_MARKER = "*"
AREA_PT2_PER_SHARE = 2600.0  # marker area (points^2) of a group holding all the time
MIN_AREA_PT2 = 14.0  # floor so a 0.01% group is still visible; documented in the size legend
WARN_COLOR = "#d62728"
FIGSIZE_IN = (15.0, 9.0)
MAIN_RECT = (0.09, 0.27, 0.52, 0.65)  # left margin fits "100 GFLOP/s" ticks and the axis title
TABLE_RECT = (0.635, 0.27, 0.355, 0.65)
CLOCK_STRIP_IN = 3.2  # height of the `--clocks` strip under the chart
LINK_STRIP_IN = 3.6  # height of the link panel (collectives) under the chart
MAX_LABELS = 6  # labels on the chart, largest groups first: the side table names the rest
NOTE_FONTSIZE = 8.8
TABLE_ROWS = 15  # rows the side table holds at two lines each; the rest are counted under it


def marker_area_pt2(time_share: float) -> float:
    """Marker area proportional to the group's time share (with a visibility floor)."""
    return max(MIN_AREA_PT2, AREA_PT2_PER_SHARE * float(time_share))


def new_figure(dpi: float) -> Figure:
    """A fixed-size figure with an Agg canvas attached (needed to measure text for the layout)."""
    fig = Figure(figsize=FIGSIZE_IN, dpi=dpi)
    FigureCanvasAgg(fig)
    return fig


def figure_with_strips(dpi: float, heights_in: list[float]) -> tuple[Figure, SubFigure, list[SubFigure]]:
    """The chart's figure made taller by panels of these heights under it: (figure, chart, panels)."""
    fig = Figure(figsize=(FIGSIZE_IN[0], FIGSIZE_IN[1] + sum(heights_in)), dpi=dpi)
    FigureCanvasAgg(fig)
    chart, *strips = fig.subfigures(1 + len(heights_in), 1, height_ratios=[FIGSIZE_IN[1], *heights_in])
    return fig, chart, strips


filter_table = filter_groups  # --filter, the same as `show --filter` (analysis/selection.py)


_Draw = TypeVar("_Draw", bound=Callable[..., Any])


def literal_text(draw: _Draw) -> _Draw:
    """Draw with Matplotlib's mathtext off: every string on a chart (names from a trace, --title,
    --filter) is text, and a '$' in it a dollar sign (`$\\frac{$` would crash the parser). The
    setting stays with each text it made, so saving the figure later keeps it."""
    @functools.wraps(draw)
    def drawn(*args: Any, **kwargs: Any) -> Any:
        with matplotlib.rc_context({"text.parse_math": False}):
            return draw(*args, **kwargs)
    return drawn  # type: ignore[return-value]


def plain_names(table: pd.DataFrame) -> pd.DataFrame:
    """The table with terminal control codes taken out of its names (escape.plain): no glyph for them."""
    out = table.copy()
    for column in ("kernel", "op", "module", "shapes"):
        if column in out.columns:
            out[column] = out[column].map(plain)
    return out


def color_for(row: pd.Series, color_by: str, families: list[str]) -> str:
    if color_by == "family":
        fam = str(row.get("op_family", "") or "other")
        return FAMILY_PALETTE[families.index(fam) % len(FAMILY_PALETTE)] if fam in families else "#7f7f7f"
    return BOUND_COLORS.get(str(row.get("bound", "unknown")), BOUND_COLORS["unknown"])


@literal_text
def plot_profile(data: ProfileData, *, model: ChartModel | None = None, top: int = 10, color_by: str = "bound",
                 filter_regex: str | None = None, title: str | None = None, dpi: float = 110) -> Figure:
    """The roofline chart of one profile as a Figure (shown inline by Jupyter, saved by save_figure).
    model: what analysis/charts.chart_model computed for it (the collectives' message sizes for the
    link panel; with clocks, the strip of SM clock and power under the chart); needed when the
    profile has collectives."""
    if color_by not in ("bound", "family"):
        raise UsageError(f"--color-by must be 'bound' or 'family', not {color_by!r}.")
    if data.ceilings.memory_bytes_per_s.get("dram") is None:
        raise UsageError("The profile has no DRAM roof in its ceilings, so no roofline can be drawn.")
    if model is None:
        if (data.kernels.get("unit", pd.Series(dtype=str)) == "link").any():
            raise ValueError("this profile has collectives: pass model=analysis.charts.chart_model(data)")
        model = ChartModel(pd.Series(math.nan, index=data.kernels.index, dtype=float))
    all_rows = data.kernels.assign(message_bytes=model.message_bytes)
    total_time_s = float(all_rows["time_s"].sum())
    table = plain_names(filter_table(all_rows, filter_regex).sort_values("time_s", ascending=False, ignore_index=True))
    if total_time_s > 0:
        table = table.assign(time_share=table["time_s"] / total_time_s)
    points, families = _placed(table, color_by)
    root, fig = _figure_for(data, model, points, dpi)
    ax = fig.add_axes(MAIN_RECT)
    lines = roof_lines(data.ceilings, table, (data.summary.get("clocks") or {}).get("roof_shifts"))
    frame = compute_frame(points, lines, data.ceilings.dram().value)
    setup_axes(ax, frame)

    drawn = points[~points["where"].isin(["unknown", "link"])].copy()
    drawn["px"] = drawn["x"].where(drawn["where"] == "roofline", frame.strip_x)
    drawn["py"] = drawn["y"].where(drawn["where"] == "roofline", frame.strip_x * drawn["bytes_per_s"])
    draw_points(ax, drawn)
    boxes = marker_boxes(ax, list(drawn["px"]), list(drawn["py"]), list(drawn["area_pt2"]))
    roof_texts = draw_roofs(ax, lines, frame, boxes)
    place_labels(ax, fig.canvas.get_renderer(), label_specs(drawn[drawn["rank_by_time"] <= top]), roof_texts, boxes)

    draw_table(fig.add_axes(TABLE_RECT), points, top, iterations_of(data))
    draw_legend(fig, drawn, color_by, families)
    draw_notes(fig, points, table, all_rows, filter_regex, total_time_s)
    _draw_headings(fig, data, title, total_time_s, len(all_rows))
    return root


def _placed(table: pd.DataFrame, color_by: str) -> tuple[pd.DataFrame, list[str]]:
    """The rows placed on the chart (plot_roofs.place_groups) with rank, colour and marker area."""
    points = place_groups(table)
    points["rank_by_time"] = range(1, len(points) + 1)
    families = sorted({str(f) or "other" for f in points["op_family"]})
    points["color"] = [color_for(r, color_by, families) for _, r in points.iterrows()]
    points["area_pt2"] = points["time_share"].map(marker_area_pt2)
    return points, families


def _figure_for(data: ProfileData, model: ChartModel, points: pd.DataFrame,
                dpi: float) -> tuple[Figure, Figure | SubFigure]:
    """(the figure to return, the part the roofline goes in): taller, with the clock strip and the
    link panel under the chart, when there are clocks to draw or collectives."""
    link = link_rows(points)
    heights = ([CLOCK_STRIP_IN] if model.clocks is not None else []) + ([LINK_STRIP_IN] if len(link) else [])
    if not heights:
        fig = new_figure(dpi)
        return fig, fig
    root, chart, strips = figure_with_strips(dpi, heights)
    if model.clocks is not None:
        draw_clock_strip(strips[0], model.clocks)
    if len(link):
        draw_link_panel(strips[-1], data, link, points["area_pt2"], model)
    return root, chart


def _draw_headings(fig: Figure | SubFigure, data: ProfileData, title: str | None, total_time_s: float,
                   groups: int) -> None:
    """The title and the subtitle: kernel time (per iteration when there are several), groups, command."""
    iterations = iterations_of(data)
    device = data.ceilings.device_name or data.metadata.get("device_name", "")
    heading = plain(title) if title else f"Roofline: {plain(device)}"
    fig.suptitle(heading, x=MAIN_RECT[0], y=0.975, ha="left", fontsize=14, fontweight="bold")
    per_it = f" per iteration ({iterations:g} iterations)" if iterations > 1 else ""
    fig.text(MAIN_RECT[0], 0.935, f"{seconds(total_time_s / iterations)} of kernel time{per_it} "
             f"in {groups} groups"
             + (f" · {plain(command_text(data.metadata.get('command')))}" if data.metadata.get("command") else ""),
             fontsize=9.5, color="#444444", gid="subtitle")


def rank_ranges(ranks: list[int]) -> str:
    """[1, 2, 3, 6] -> '1-3,6'."""
    runs: list[list[int]] = []
    for rank in ranks:
        if runs and rank == runs[-1][-1] + 1:
            runs[-1].append(rank)
        else:
            runs.append([rank])
    return ",".join(f"{r[0]}-{r[-1]}" if len(r) > 2 else ",".join(map(str, r)) for r in runs)


def label_specs(candidates: pd.DataFrame) -> list[LabelSpec]:
    """At most MAX_LABELS labels, one per spot, the spots holding the largest groups first: groups
    drawn on one spot (the same GEMM shape in several layers) share a label, `1-3. mm`; the side
    table names every group. A label over a group above its roof is red with a ⚠ (the note says why)."""
    specs = []
    rows = list(candidates.itertuples())
    for members in coincident_groups([r.px for r in rows], [r.py for r in rows])[:MAX_LABELS]:
        pile = [rows[i] for i in members]
        names = list(dict.fromkeys(group_label(r, 22) for r in pile))
        above = any(r.above_roof for r in pile)
        text = f"{rank_ranges([r.rank_by_time for r in pile])}. {names[0]}"
        text += f" +{len(names) - 1} other" if len(names) > 1 else ""
        first = pile[0]
        specs.append(LabelSpec(first.px, first.py, text + (" ⚠" if above else ""), math.sqrt(first.area_pt2) / 2,
                               WARN_COLOR if above else "#111111", f"label:{first.rank_by_time}"))
    return specs


def draw_points(ax: Axes, drawn: pd.DataFrame) -> None:
    """One scatter per precision (marker); red thick edge for rows above their roof."""
    for precision, group in drawn.groupby(drawn["precision"].replace("", "other"), sort=True):
        marker = PRECISION_MARKERS.get(str(precision), OTHER_MARKER)
        edge = [WARN_COLOR if a else "white" for a in group["above_roof"]]
        width = [2.2 if a else 0.7 for a in group["above_roof"]]
        ax.scatter(group["px"], group["py"], s=group["area_pt2"], c=list(group["color"]), marker=marker,
                   edgecolors=edge, linewidths=width, alpha=0.85, zorder=4, gid=f"points:{precision}")


def draw_table(ax: Axes, points: pd.DataFrame, top: int, iterations: float = 1.0) -> None:
    """The legend table: rank, time share, time, bound, op · module and the shortened kernel; the
    time per iteration (`time/it`) when the profile has several, as `show` gives it."""
    ax.set_axis_off()
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    rows = points.head(min(max(top, 0), TABLE_ROWS))
    ax.text(0, 1.0, "Top groups by time", fontsize=10.5, fontweight="bold", va="top", gid="table:title")
    time_head = "time/it" if iterations > 1 else "time"
    ax.text(0, 0.965, f"{'#':>2} {'share':>6} {time_head:>9}  {'bound':<8} op · module / kernel", family="monospace",
            fontsize=8, color="#555555", va="top", gid="table:header")
    line_h = min(0.062, 0.93 / max(len(rows), 1))
    for i, r in enumerate(rows.itertuples()):
        y = 0.93 - i * line_h
        where = {"unknown": "no cost", "no_flops": "0 FLOP", "link": "link ↓"}.get(r.where, "")
        bound = where or str(r.bound)
        color = WARN_COLOR if r.above_roof else ("#8c8c8c" if r.where == "unknown" else "#111111")
        cells = number_cells(r, iterations)  # the numbers as `show` writes them
        head = f"{r.rank_by_time:>2} {cells['share']:>6} {cells['time']:>9}  {bound:<8} "
        head += op_at_module(str(r.op or "?"), str(r.module or ""), 34)
        ax.text(0, y, head, family="monospace", fontsize=8, color=color, va="top", gid=f"table:row:{r.rank_by_time}")
        ax.text(0.045, y - line_h * 0.42, shorten_kernel_name(str(r.kernel), 62), family="monospace", fontsize=7,
                color="#666666", va="top", gid=f"table:kernel:{r.rank_by_time}")
    rest = points.iloc[len(rows):]
    if len(rest):
        ax.text(0, 0.93 - len(rows) * line_h, f"   + {len(rest)} more groups, {100 * rest['time_share'].sum():.1f}% of time",
                family="monospace", fontsize=8, color="#555555", va="top", gid="table:rest")


def draw_legend(fig: Figure | SubFigure, drawn: pd.DataFrame, color_by: str, families: list[str]) -> None:
    """Colour (bound or family), marker (precision) and size (time share) keys, below the chart."""
    handles: list[Line2D] = []
    keys = sorted(set(drawn["bound"])) if color_by == "bound" else [f for f in families if f in set(drawn["op_family"].replace("", "other"))]
    for key in keys:
        color = BOUND_COLORS.get(key, "#8c8c8c") if color_by == "bound" else FAMILY_PALETTE[families.index(key) % len(FAMILY_PALETTE)]
        handles.append(Line2D([], [], marker="o", linestyle="", color=color, markersize=8, label=f"{key}"))
    for precision in sorted(set(drawn["precision"].replace("", "other"))):
        handles.append(Line2D([], [], marker=PRECISION_MARKERS.get(precision, OTHER_MARKER), linestyle="",
                              color="#555555", markerfacecolor="none", markersize=8, label=precision))
    for share in (0.01, 0.05, 0.2):
        handles.append(Line2D([], [], marker="o", linestyle="", color="#bbbbbb",
                              markersize=math.sqrt(marker_area_pt2(share)), label=f"{share:.0%} of time"))
    handles.append(Line2D([], [], marker="o", linestyle="", color="white", markeredgecolor=WARN_COLOR,
                          markeredgewidth=2.2, markersize=8, label="above roof"))
    fig.legend(handles=handles, loc="upper left", bbox_to_anchor=(MAIN_RECT[0] - 0.01, 0.205), ncol=6,
               fontsize=8.5, frameon=False, title=f"colour: {color_by} · marker: precision · area: time share",
               title_fontsize=8.5, alignment="left", columnspacing=1.6, handletextpad=0.9, labelspacing=0.9)


def draw_notes(fig: Figure | SubFigure, points: pd.DataFrame, table: pd.DataFrame, all_rows: pd.DataFrame,
               filter_regex: str | None, total_time_s: float) -> None:
    """Say what is not on the chart, and what is on it but suspect: nothing dropped silently."""
    notes: list[tuple[str, str, str]] = []
    fit = _note_fitter(fig)
    unknown = points[points["where"] == "unknown"]
    if len(unknown):
        head = f"Not on the chart, cost unknown ({100 * unknown['time_share'].sum():.1f}% of time): "
        items = [f"{group_label(r, 28)} {100 * r.time_share:.1f}%" for _, r in unknown.iterrows()]
        notes.append((fit(head, items), "#444444", "note:unknown"))
    above = points[points["above_roof"].astype(bool)]
    if len(above):
        head = (f"⚠ {len(above)} group above its roof" if len(above) == 1 else
                f"⚠ {len(above)} groups above their roof") + ", check the counts (not a success): "
        notes.append((fit(head, [f"{r.rank_by_time}. {group_label(r, 28)}" for r in above.itertuples()]),
                       WARN_COLOR, "note:above_roof"))
    if filter_regex:
        share = table["time_s"].sum() / total_time_s if total_time_s > 0 else 0.0
        notes.append((f"--filter {filter_regex!r}: {len(table)} of {len(all_rows)} groups shown, {100 * share:.1f}% of kernel time",
                      "#444444", "note:filter"))
    for i, (text, color, gid) in enumerate(notes):
        fig.text(MAIN_RECT[0], 0.075 - i * 0.027, text, fontsize=NOTE_FONTSIZE, color=color, gid=gid)


def _note_fitter(fig: Figure | SubFigure) -> Callable[[str, list[str]], str]:
    """fitted_list measuring footer text on this figure: a note ends inside the figure's width."""
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    width_px = fig.bbox.width * (1 - MAIN_RECT[0] - 0.01)
    probe = Text(0, 0, "", fontsize=NOTE_FONTSIZE, figure=fig.figure if isinstance(fig, SubFigure) else fig)

    def measure(text: str) -> float:
        probe.set_text(text)
        return probe.get_window_extent(renderer).width

    def fit(head: str, items: list[str]) -> str:
        return fitted_list(measure, width_px, head, items)

    return fit


def command_text(command: object) -> str:
    """['rooflinectl', 'profile', '/long/path/x.py'] -> 'rooflinectl profile x.py'."""
    if not isinstance(command, (list, tuple)):
        return str(command)
    return " ".join(os.path.basename(str(a)) if "/" in str(a) else str(a) for a in command)


def save_figure(fig: Figure, path: str | os.PathLike[str], dpi: float | None = None) -> Path:
    """Save PNG/SVG/PDF (by extension) through a temp file and a rename: never half a chart."""
    target = Path(path)
    fmt = SUPPORTED_EXTENSIONS.get(target.suffix.lower())
    if fmt is None:
        raise UsageError(f"Cannot write {target.name}: the chart is saved as .png, .svg or .pdf.")
    with atomic_file(target, binary=True) as handle:
        fig.savefig(handle, format=fmt, dpi=dpi or fig.dpi, facecolor="white")
    return target
