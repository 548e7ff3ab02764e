"""The hierarchical roofline (`plot --levels`), as Nsight Compute draws it: per kernel group one
point per memory level (DRAM, L2, L1), at that level's intensity, all at the group's achieved
executed FLOP/s, against one roof per level.

Counters only (`profile --counters ncu`): x = measured FLOPs / bytes moved at the level, y =
measured FLOPs / time. A kernel whose L1 or L2 point sits far left of its DRAM point moves many
more bytes through that cache than from DRAM (poor reuse or uncoalesced access when it is also
the one near its roof); a DRAM point right of the others means the data stayed in the caches.
Roofs come from the ceilings: measured where `ceilings --measure` ran, else an estimate named
as such (L1), else not drawn (a note says so).
"""

from __future__ import annotations

import math

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from rooflinectl.errors import UsageError
from rooflinectl.outputs.escape import plain
from rooflinectl.outputs.plot import (
    FAMILY_PALETTE,
    MAIN_RECT,
    TABLE_RECT,
    draw_table,
    filter_table,
    literal_text,
    marker_area_pt2,
    new_figure,
    plain_names,
)
from rooflinectl.outputs.plot_layout import LabelSpec, marker_boxes, place_labels
from rooflinectl.outputs.plot_names import group_label
from rooflinectl.outputs.plot_roofs import (
    MEMORY_NAMES,
    RoofLine,
    compute_frame,
    draw_roofs,
    setup_axes,
)
from rooflinectl.profile_model import ProfileData, iterations_of
from rooflinectl.units import seconds, si

LEVELS = ("dram", "l2", "l1")
LEVEL_BYTES = {"dram": "dram_bytes", "l2": "l2_bytes", "l1": "l1_bytes"}
LEVEL_MARKERS = {"dram": "o", "l2": "s", "l1": "^"}
OTHER_COLOR = "#b0b0b0"


def level_points(table: pd.DataFrame) -> pd.DataFrame:
    """One row per (kernel group, memory level) with counters: x FLOP/byte at that level, y FLOP/s."""
    rows = []
    for position, r in enumerate(table.itertuples(index=False)):
        flops, time_s = float(r.measured_flops), float(r.time_s)
        if not (r.measured_launches > 0 and flops > 0 and time_s > 0):
            continue
        for level in LEVELS:
            moved = float(getattr(r, LEVEL_BYTES[level]))
            if moved > 0 and math.isfinite(moved):
                rows.append({"group": position, "level": level, "x": flops / moved, "y": flops / time_s})
    return pd.DataFrame(rows, columns=["group", "level", "x", "y"])


def level_roofs(data: ProfileData, table: pd.DataFrame) -> tuple[list[RoofLine], list[str]]:
    """Memory roofs per level (measured, spec or estimate) and compute roofs of the precisions that
    ran; plus a note for each level without a roof."""
    lines, missing = [], []
    for level in LEVELS:
        roof = data.ceilings.memory_roof(level, fall_back=False)
        if roof is None or roof.value <= 0:
            missing.append(MEMORY_NAMES[level])
            continue
        lines.append(RoofLine(level, "memory", roof.value, roof.source,
                              f"{MEMORY_NAMES[level]} {si(roof.value, 'B/s', 2)} ({roof.source})"))
    keys = sorted({k for k in table["measured_precision"] if k and k in data.ceilings.compute_flops_per_s},
                  key=lambda k: -data.ceilings.compute_flops_per_s[k].value)
    for key in keys:
        roof = data.ceilings.compute_flops_per_s[key]
        unit, precision = key.split(".", 1)
        lines.append(RoofLine(key, "compute", roof.value, roof.source,
                              f"{precision} {unit} {si(roof.value, 'FLOP/s')} ({roof.source})"))
    return lines, missing


@literal_text
def plot_levels(data: ProfileData, *, top: int = 10, filter_regex: str | None = None, title: str | None = None,
                dpi: float = 110) -> Figure:
    """The hierarchical roofline of a profile with counters, as a Figure."""
    if "measured_launches" not in data.kernels.columns or not (data.kernels["measured_launches"] > 0).any():
        raise UsageError("This profile holds no counters, so it has no per-level bytes: profile it with "
                         "`rooflinectl profile --counters ncu`, then plot --levels.")
    if data.ceilings.memory_roof("dram", fall_back=False) is None:
        raise UsageError("The profile has no DRAM roof in its ceilings, so no roofline can be drawn.")
    all_rows = data.kernels
    total_time_s = float(all_rows["time_s"].sum())
    table = plain_names(filter_table(all_rows, filter_regex).sort_values("time_s", ascending=False, ignore_index=True))
    table = table.assign(time_share=table["time_s"] / total_time_s if total_time_s > 0 else 0.0,
                         rank_by_time=range(1, len(table) + 1), where="roofline")
    points = level_points(table)
    lines, missing = level_roofs(data, table)

    fig = new_figure(dpi)
    ax = fig.add_axes(MAIN_RECT)
    frame_points = points.assign(where="roofline", bytes_per_s=float("nan"))
    frame = compute_frame(frame_points, lines, data.ceilings.memory_roof("dram", fall_back=False).value)
    setup_axes(ax, frame)
    ax.set_ylabel("Performance (executed FLOP/s, measured)")
    ax.set_xlabel("Arithmetic intensity at each memory level (measured FLOP / byte)")

    colors = {g: FAMILY_PALETTE[i % len(FAMILY_PALETTE)] if i < top else OTHER_COLOR
              for i, g in enumerate(sorted(points["group"].unique()))}
    areas = {g: marker_area_pt2(float(table.loc[g, "time_share"])) for g in colors}
    for group, pts in points.groupby("group"):
        ax.plot(pts["x"], pts["y"], color=colors[group], linewidth=0.8, alpha=0.6, zorder=3, gid=f"levels:{group}")
    for level in LEVELS:
        pts = points[points["level"] == level]
        if len(pts):
            ax.scatter(pts["x"], pts["y"], s=[areas[g] for g in pts["group"]], c=[colors[g] for g in pts["group"]],
                       marker=LEVEL_MARKERS[level], edgecolors="white", linewidths=0.7, alpha=0.9, zorder=4,
                       gid=f"points:{level}")
    boxes = marker_boxes(ax, list(points["x"]), list(points["y"]), [areas[g] for g in points["group"]])
    roof_texts = draw_roofs(ax, lines, frame, boxes)
    anchors = points.sort_values("x").groupby("group").first()  # label each group at its leftmost point
    specs = [LabelSpec(r.x, r.y, f"{int(table.loc[g, 'rank_by_time'])}. {group_label(table.loc[g], 22)}",
                       math.sqrt(areas[g]) / 2, "#111111", f"label:{int(table.loc[g, 'rank_by_time'])}")
             for g, r in anchors.iterrows() if g < top]
    place_labels(ax, fig.canvas.get_renderer(), specs, roof_texts, boxes)

    draw_table(fig.add_axes(TABLE_RECT), table, top, iterations_of(data))  # time per iteration, as `show`
    handles = [Line2D([], [], marker=LEVEL_MARKERS[lv], linestyle="", color="#555555", markerfacecolor="none",
                      markersize=8, label=MEMORY_NAMES[lv]) for lv in LEVELS]
    fig.legend(handles=handles, loc="upper left", bbox_to_anchor=(MAIN_RECT[0] - 0.01, 0.205), ncol=3,
               fontsize=8.5, frameon=False, title="marker: memory level · colour: kernel group · area: time share",
               title_fontsize=8.5, alignment="left")
    _notes(fig, table, points, missing)
    heading = plain(title) if title else f"Hierarchical roofline: {plain(data.ceilings.device_name)}"
    fig.suptitle(heading, x=MAIN_RECT[0], y=0.975, ha="left", fontsize=14, fontweight="bold")
    counters = data.summary.get("counters") or {}
    fig.text(MAIN_RECT[0], 0.935, f"{seconds(total_time_s, micro='µs')} of kernel time; counters from ncu "
             f"{counters.get('ncu_version', '')} on {counters.get('launches_measured', '?')} launches "
             "(DRAM bytes with cold caches)", fontsize=9.5, color="#444444", gid="subtitle")
    return fig


def _notes(fig: Figure, table: pd.DataFrame, points: pd.DataFrame, missing: list[str]) -> None:
    """What is not on the chart: groups without counters, groups that executed no FLOPs, roofs."""
    drawn = set(points["group"])
    unmeasured = table[table["measured_launches"] <= 0]
    no_flops = table[(table["measured_launches"] > 0) & ~table.index.isin(drawn)]
    notes = []
    if len(unmeasured):
        notes.append(f"No counters ({100 * unmeasured['time_share'].sum():.1f}% of time, e.g. memcpy/memset, which "
                     f"ncu does not replay): {len(unmeasured)} groups")
    if len(no_flops):
        notes.append(f"Executed no floating-point instruction (copies, moves; {100 * no_flops['time_share'].sum():.1f}% "
                     f"of time): {len(no_flops)} groups, not placed")
    if missing:
        notes.append(f"No roof for {', '.join(missing)}: run `rooflinectl ceilings --measure` before profiling")
    for i, text in enumerate(notes):
        fig.text(MAIN_RECT[0], 0.075 - i * 0.027, text, fontsize=8.8, color="#444444", gid=f"note:{i}")
