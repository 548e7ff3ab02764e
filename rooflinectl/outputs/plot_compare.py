"""Before/after roofline: an arrow per kernel group from where it was to where it is, with speedup.

Groups are matched, per iteration, by the matcher `diff` uses (analysis/matching.py): from the
same group down to the module as a whole (so naive attention's bmm+softmax+bmm in `attn` is
compared with the fused SDPA kernel in the same `attn`). What matches nothing is listed.
"""

from __future__ import annotations

import math

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from rooflinectl.analysis.charts import Comparison
from rooflinectl.errors import UsageError
from rooflinectl.outputs.escape import plain
from rooflinectl.outputs.plot import (
    MAIN_RECT,
    TABLE_RECT,
    WARN_COLOR,
    literal_text,
    new_figure,
    plain_names,
)
from rooflinectl.outputs.plot_layout import Box, LabelSpec, marker_boxes, place_labels
from rooflinectl.outputs.plot_names import ellipsize, short_op
from rooflinectl.outputs.plot_roofs import (
    compute_frame,
    draw_roofs,
    place_groups,
    roof_lines,
    setup_axes,
)
from rooflinectl.profile_model import ProfileData, iterations_of
from rooflinectl.units import seconds

FASTER, SLOWER, UNCHANGED = "#2ca02c", "#d62728", "#777777"
UNCHANGED_WITHIN = 0.03  # a speed-up within 3% of 1.0 is run-to-run noise, drawn grey


def speedup_color(speedup: float) -> str:
    if abs(speedup - 1.0) <= UNCHANGED_WITHIN:
        return UNCHANGED
    return FASTER if speedup > 1 else SLOWER


def pair_label(level: str, op: str, module: str) -> str:
    """'mm · proj' for a matched op, 'attn (all ops)' for a module matched as a whole."""
    leaf = module.split(".")[-1]
    if level == "module":
        return f"{leaf} (all ops)"
    return f"{short_op(op)} · {leaf}" if module else short_op(op)


def _side(table: pd.DataFrame, side: str) -> pd.DataFrame:
    cols = {f"{c}_{side}": c for c in ("time_s", "flops", "bytes", "cost_source")}
    return place_groups(table[list(cols)].rename(columns=cols))


@literal_text
def plot_comparison(before: ProfileData, after: ProfileData, comparison: Comparison, *, top: int = 10,
                    title: str | None = None, names: tuple[str, str] = ("before", "after"), dpi: float = 110) -> Figure:
    """Roofline with an arrow per matched group, its speedup, and the total time of each profile;
    comparison: analysis/charts.compare_for_chart(before, after, filter_regex)."""
    if after.ceilings.memory_bytes_per_s.get("dram") is None:
        raise UsageError("The second profile has no DRAM roof in its ceilings, so no roofline can be drawn.")
    match = comparison.match
    pairs, b_rest, a_rest = match.pairs.copy(), plain_names(match.only_base), plain_names(match.only_new)
    pairs["label"] = [plain(pair_label(r.level, r.op_new, r.module_new)) for r in pairs.itertuples()]
    names = (plain(names[0]), plain(names[1]))
    pb, pa = _side(pairs, "base"), _side(pairs, "new")
    ob, oa = place_groups(b_rest), place_groups(a_rest)

    fig = new_figure(dpi)
    ax = fig.add_axes(MAIN_RECT)
    lines = roof_lines(after.ceilings, pd.concat([comparison.base_rows, comparison.new_rows]))
    bw = after.ceilings.dram().value
    frame = compute_frame(pd.concat([pb, pa, ob, oa], ignore_index=True), lines, bw)
    setup_axes(ax, frame)

    def xy(points: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
        x = points["x"].where(points["where"] == "roofline", frame.strip_x)
        y = points["y"].where(points["where"] == "roofline", frame.strip_x * points["bytes_per_s"])
        return x, y

    drawable = ~pb["where"].isin(["unknown", "link"]) & ~pa["where"].isin(["unknown", "link"])
    top_peak = max((r.value for r in lines if r.kind == "compute"), default=math.inf)
    specs, anchors, above = _draw_arrows(ax, pairs, drawable, xy(pb), xy(pa), (top_peak, bw), top)
    for rest, face, gid in ((ob, "none", "only_before"), (oa, "#555555", "only_after")):
        shown = rest[~rest["where"].isin(["unknown", "link"])]
        if len(shown):
            x, y = xy(shown)
            ax.scatter(x, y, s=40, marker="X", facecolors=face, edgecolors="#555555", zorder=4, gid=gid)
    def boxes() -> list[Box]:  # measured again after the roofs are drawn, as place_labels needs
        return marker_boxes(ax, [a[0] for a in anchors], [a[1] for a in anchors], [70.0] * len(anchors))

    texts = draw_roofs(ax, lines, frame, boxes())
    place_labels(ax, fig.canvas.get_renderer(), specs, texts, boxes())

    _draw_totals(fig, comparison, before, after, title, names)
    _draw_pair_table(fig.add_axes(TABLE_RECT), pairs, top, names)
    _draw_notes(fig, pairs, drawable, b_rest, a_rest, names, comparison, before, after,
                (pb["where"] == "link") | (pa["where"] == "link"))
    if above:
        fig.text(MAIN_RECT[0], 0.2, "⚠ Above the roof, check the counts (not a success): " + ", ".join(above),
                 fontsize=8.8, color=WARN_COLOR, gid="note:above_roof")
    return fig


def _draw_arrows(ax: Axes, pairs: pd.DataFrame, drawable: pd.Series, before_xy: tuple[pd.Series, pd.Series],
                 after_xy: tuple[pd.Series, pd.Series], roofs: tuple[float, float],
                 top: int) -> tuple[list[LabelSpec], list[tuple[float, float]], list[str]]:
    """One arrow per drawable pair, from its place before to its place after; (the labels of the
    `top` first, the arrow heads, the pairs above a roof). roofs: (top compute peak, DRAM B/s)."""
    (bx, by), (axx, ayy) = before_xy, after_xy
    top_peak, bw = roofs
    specs: list[LabelSpec] = []
    anchors: list[tuple[float, float]] = []
    above: list[str] = []
    for i in pairs.index[drawable]:
        color = speedup_color(pairs.at[i, "speedup"])
        over = [y > 1.05 * min(top_peak, x * bw) for x, y in ((bx[i], by[i]), (axx[i], ayy[i]))]
        if any(over):
            above.append(str(pairs.at[i, "label"]))
        ax.scatter([bx[i]], [by[i]], s=60, facecolors="none", edgecolors=WARN_COLOR if over[0] else "#777777",
                   linewidths=2.2 if over[0] else 1.2, zorder=4, gid=f"before:{i}")
        ax.scatter([axx[i]], [ayy[i]], s=70, c=color, edgecolors=WARN_COLOR if over[1] else "white",
                   linewidths=2.2 if over[1] else 0.8, zorder=5, gid=f"after:{i}")
        ax.annotate("", (axx[i], ayy[i]), (bx[i], by[i]), gid=f"arrow:{i}", zorder=4,
                    arrowprops={"arrowstyle": "-|>", "color": color, "lw": 1.5, "shrinkA": 4, "shrinkB": 5})
        anchors.append((axx[i], ayy[i]))
        if len(specs) < top:
            specs.append(LabelSpec(axx[i], ayy[i], f"{ellipsize(pairs.at[i, 'label'], 22)}  {pairs.at[i, 'speedup']:.2f}×",
                                   5.0, color, f"speedup:{i}"))
    return specs, anchors, above


def _draw_totals(fig: Figure, comparison: Comparison, before: ProfileData, after: ProfileData, title: str | None,
                 names: tuple[str, str]) -> None:
    """The title, and each side's kernel time (of the groups --filter kept) with the overall speedup."""
    t_before, t_after = float(comparison.base_rows["time_s"].sum()), float(comparison.new_rows["time_s"].sum())
    overall = t_before / t_after if t_after > 0 else math.inf
    per = " per iteration" if max(iterations_of(before), iterations_of(after)) > 1 else ""
    fig.suptitle(plain(title) if title else f"Roofline comparison: {plain(after.ceilings.device_name)}",
                 x=MAIN_RECT[0], y=0.975, ha="left", fontsize=14, fontweight="bold")
    fig.text(MAIN_RECT[0], 0.935, f"{names[0]}: {seconds(t_before, micro='µs')}  →  {names[1]}: "
             f"{seconds(t_after, micro='µs')} of kernel time{per}  ({overall:.2f}× "
             f"{'faster' if overall >= 1 else 'slower'})", fontsize=10.5, color="#222222", gid="totals")


def _draw_pair_table(ax: Axes, pairs: pd.DataFrame, top: int, names: tuple[str, str]) -> None:
    ax.set_axis_off()
    ax.text(0, 1.0, "Matched groups (largest first)", fontsize=10.5, fontweight="bold", va="top", transform=ax.transAxes)
    ax.text(0, 0.965, f"{'group':<26} {'before':>9} {'after':>9} {'speedup':>8}  match", family="monospace",
            fontsize=8, color="#555555", va="top", transform=ax.transAxes, gid="table:header")
    for i, r in enumerate(pairs.head(top).itertuples()):
        color = speedup_color(r.speedup)
        ax.text(0, 0.93 - i * 0.04, f"{ellipsize(r.label, 26):<26} {seconds(r.time_s_base, micro='µs'):>9} {seconds(r.time_s_new, micro='µs'):>9}"
                f" {r.speedup:>7.2f}×  {r.level}", family="monospace", fontsize=8, color=color, va="top",
                transform=ax.transAxes, gid=f"table:row:{i}")


def _draw_notes(fig: Figure, pairs: pd.DataFrame, drawable: pd.Series, b_rest: pd.DataFrame, a_rest: pd.DataFrame,
                names: tuple[str, str], comparison: Comparison, before: ProfileData, after: ProfileData,
                linked: pd.Series | None = None) -> None:
    """What has no arrow, and why: matched but cost unknown, or present on one side only."""
    notes: list[str] = []
    t_b, t_a = comparison.base_total_s, comparison.new_total_s
    collective = linked if linked is not None else pd.Series(False, index=pairs.index)
    unknown = pairs[~drawable & ~collective]
    if len(unknown):
        notes.append("Matched but cost unknown (no arrow): " + ", ".join(
            f"{r.label} {r.speedup:.2f}×" for r in unknown.head(6).itertuples()))
    links = pairs[~drawable & collective]
    if len(links):
        notes.append("Collectives (no FLOPs: held against the link, not drawn): " + ", ".join(
            f"{r.label} {r.speedup:.2f}×" for r in links.head(6).itertuples()))
    for rest, name, total in ((b_rest, names[0], t_b), (a_rest, names[1], t_a)):
        if len(rest):
            share = 100 * rest["time_s"].sum() / total if total > 0 else 0.0
            notes.append(f"Only in {name} (✕ marker, {share:.1f}% of its time): " + ", ".join(
                ellipsize(short_op(str(o)) or "?", 24) for o in rest.sort_values("time_s", ascending=False)["op"].head(6)))
    if before.ceilings.device_name != after.ceilings.device_name:
        notes.append(f"Roofs are {names[1]}'s device ({plain(after.ceilings.device_name)}); {names[0]} ran on "
                     f"{plain(before.ceilings.device_name)}.")
    notes.append("○ grey: position in " + names[0] + " · ● colour: position in " + names[1] + " (green faster, red slower)")
    for i, text in enumerate(notes):
        fig.text(MAIN_RECT[0], 0.17 - i * 0.03, text, fontsize=8.8, color="#444444", gid=f"note:{i}")
