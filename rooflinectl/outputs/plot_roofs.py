"""The roofline frame shared by the single and the comparison chart: roofs, ridges, axes, units.

Where a kernel group sits on the chart is decided here too (`place_groups`), so both charts
put zero-FLOP kernels and unknown-cost kernels in the same, documented place.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.lines import Line2D
from matplotlib.text import Text
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from rooflinectl.ceilings.model import Ceilings
from rooflinectl.outputs.plot_layout import display_path
from rooflinectl.outputs.plot_roof_labels import (
    KeyEntry,
    LabelField,
    flat_label,
    remove_key,
    roof_key,
    slope_label,
)
from rooflinectl.units import si

MEMORY_STYLES = {"dram": "-", "l2": "--", "l1": ":", "cache": "--"}
MEMORY_NAMES = {"dram": "DRAM", "l2": "L2", "l1": "L1", "cache": "cache"}
ACHIEVABLE_STYLE = (0, (5, 3))  # the measured achievable peak: dashed, under the roof it belongs to
ACHIEVABLE_SHOWN_BELOW = 0.9  # closer to its roof than this, the dashed line would sit on it (log scale): not drawn
ROOF_COLOR = "#333333"
STRIP_DECADES = 1.0
Box = tuple[float, float, float, float]  # x0, y0, x1, y1 in display pixels  # the zero-FLOP strip sits this many decades left of the lowest intensity


@dataclass(frozen=True)
class RoofLine:
    """One roof to draw: a memory level (slope) or a compute unit/precision (flat)."""

    key: str  # "dram", "l2", "l1", "cache" or "tensor.bf16", "simt.fp32" ("tensor.bf16:achievable")
    kind: str  # "memory", "compute" or "achievable" (the measured peak under a compute roof)
    value: float  # bytes/s or FLOP/s
    source: str
    label: str


def roof_lines(ceilings: Ceilings, kernels: pd.DataFrame, shifts: list[dict] | None = None) -> list[RoofLine]:
    """Memory roofs the ceilings hold, and one compute roof per (unit, precision) in the table.

    Precisions that share one roof (int math held against simt.fp32) are named together. A
    compute roof the run's clock moved notably (summary clocks roof_shifts) is drawn where the
    kernels met it: at the clock they ran at, as the table's attainable figures hold it.
    """
    moved = {s["roof"]: s for s in shifts or [] if s.get("notable")}
    lines = [
        RoofLine(level, "memory", roof.value, roof.source, f"{MEMORY_NAMES[level]} {si(roof.value, 'B/s', 2)} ({roof.source})")
        for level, roof in ceilings.memory_bytes_per_s.items()
        if level in MEMORY_NAMES and roof.value > 0
    ]
    used: dict[str, list[str]] = {}
    pairs = kernels.loc[kernels["cost_source"] != "none", ["unit", "precision"]].drop_duplicates()
    for unit, precision in pairs.itertuples(index=False):
        key = ceilings.compute_roof_key(str(unit), str(precision))
        if key is None:
            continue
        used.setdefault(key, [])
        if precision and precision not in used[key]:
            used[key].append(str(precision))
    for key, precisions in sorted(used.items(), key=lambda kv: -ceilings.compute_flops_per_s[kv[0]].value):
        roof = ceilings.compute_flops_per_s[key]
        unit, precision = key.split(".", 1)
        names = "/".join([precision] + [p for p in precisions if p != precision])
        value, at = roof.value, ""
        if key in moved:
            value = moved[key]["peak_at_kernel_clock_flops_per_s"]
            at = f" at {moved[key]['kernel_clock_mhz']:,.0f} MHz"
        label = f"{names} {unit} {si(value, 'FLOP/s')}{at} ({roof.source})"
        lines.append(RoofLine(key, "compute", value, roof.source, label))
        reached = ceilings.achievable_flops_per_s.get(key)
        if reached is not None and reached.value < ACHIEVABLE_SHOWN_BELOW * roof.value:
            clock = f" at {reached.clock_mhz:,.0f} MHz" if reached.clock_mhz else ""
            lines.append(RoofLine(f"{key}:achievable", "achievable", reached.value, reached.source,
                                  f"{names} {unit} achievable {si(reached.value, 'FLOP/s')}{clock} (measured)"))
    return lines


def place_groups(table: pd.DataFrame) -> pd.DataFrame:
    """Chart coordinates per row: x FLOP/byte, y FLOP/s, and where the row goes.

    `where` is "roofline" (positive FLOPs and bytes), "no_flops" (bytes moved, no arithmetic:
    drawn in a strip at the left edge, height chosen so its gap to the DRAM roof equals its
    achieved/peak bandwidth), "link" (a collective: bytes over the link, drawn in the link panel
    under the chart, plot_link.py) or "unknown" (no cost: listed in a note, never drawn).
    """
    out = table.copy()
    flops = out["flops"].astype(float)
    nbytes = out["bytes"].astype(float)
    time_s = out["time_s"].astype(float)
    known = flops.notna() & nbytes.notna() & (time_s > 0) & (out["cost_source"] != "none")
    on_roofline = known & (flops > 0) & (nbytes > 0)
    no_flops = known & (flops <= 0) & (nbytes > 0)
    on_link = known & (out["unit"] == "link") if "unit" in out.columns else known & False
    out["where"] = np.where(on_link, "link", np.where(on_roofline, "roofline", np.where(no_flops, "no_flops", "unknown")))
    out["x"] = np.where(on_roofline, flops / nbytes.where(nbytes > 0), np.nan)
    out["y"] = np.where(on_roofline, flops / time_s.where(time_s > 0), np.nan)
    out["bytes_per_s"] = np.where(known, nbytes / time_s.where(time_s > 0), np.nan)
    return out


@dataclass(frozen=True)
class Frame:
    """Axis limits and the zero-FLOP strip position, in data units."""

    x_lo: float
    x_hi: float
    y_lo: float
    y_hi: float
    strip_x: float  # where zero-FLOP points sit
    strip_hi: float  # right edge of the strip


def compute_frame(points: pd.DataFrame, lines: list[RoofLine], dram_bytes_per_s: float) -> Frame:
    """Limits that hold every point, every ridge and a little room for labels."""
    xs = list(points.loc[points["where"] == "roofline", "x"])
    ys = list(points.loc[points["where"] == "roofline", "y"])
    peaks = [r.value for r in lines if r.kind == "compute"]
    ridges = [p / dram_bytes_per_s for p in peaks] if dram_bytes_per_s > 0 else []
    x_candidates = [v for v in xs + ridges if v > 0 and math.isfinite(v)] or [1.0]
    data_lo, data_hi = min(x_candidates), max(x_candidates)
    strip_x = data_lo / 10**STRIP_DECADES
    x_lo = strip_x / 10**0.45
    x_hi = data_hi * 10**0.8
    bw = dram_bytes_per_s if dram_bytes_per_s > 0 else 1.0
    no_flops = points.loc[points["where"] == "no_flops", "bytes_per_s"]
    ys += [strip_x * v for v in no_flops if v > 0]
    y_candidates = [v for v in ys + peaks if v > 0 and math.isfinite(v)] or [bw * data_lo]
    y_lo = min(min(y_candidates), bw * data_lo) / 10**0.6
    y_hi = max(y_candidates) * 10**0.55
    return Frame(x_lo, x_hi, y_lo, y_hi, strip_x, strip_x * 10**0.4)


def setup_axes(ax: Axes, frame: Frame) -> None:
    """Log-log axes labelled in FLOP/byte and FLOP/s with readable unit prefixes."""
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(frame.x_lo, frame.x_hi)
    ax.set_ylim(frame.y_lo, frame.y_hi)
    ax.set_xlabel("Arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("Performance (FLOP/s)")
    ax.xaxis.set_major_locator(LogLocator(base=10, numticks=20))
    ax.yaxis.set_major_locator(LogLocator(base=10, numticks=20))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: si(v, "FLOP/s", 3)))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.grid(True, which="major", color="#e4e4e4", linewidth=0.7)
    ax.set_axisbelow(True)
    ax.axvspan(frame.x_lo, frame.strip_hi, color="#f1f1f1", zorder=0, gid="strip:no_flops")
    ax.text(
        math.sqrt(frame.x_lo * frame.strip_hi), frame.y_hi / 10**0.15, "no FLOPs\n(placed by\nbytes/s)",
        ha="center", va="top", fontsize=7.5, color="#666666", gid="strip:label",
    )


def draw_roofs(ax: Axes, lines: list[RoofLine], frame: Frame, avoid: list[Box] | None = None) -> list:
    """Draw each roof with its value and source; mark DRAM ridge points. Returns the label texts.

    avoid: pixel boxes (point markers) that the roof labels should not cover. Each label goes
    along its own line where it crosses no other roof and covers no other label, else into a
    key block (plot_roof_labels.py).
    """
    texts: list = []
    memory = [r for r in lines if r.kind == "memory"]
    compute = [r for r in lines if r.kind == "compute"]
    achievable = [r for r in lines if r.kind == "achievable"]
    top_peak = max((r.value for r in compute), default=frame.y_hi)
    dram = next((r for r in memory if r.key == "dram"), memory[0] if memory else None)
    drawn: dict[str, Line2D] = {}
    guides: list[Line2D] = []
    for roof in memory:
        x_end = min(top_peak / roof.value, frame.x_hi)
        (drawn[roof.key],) = ax.plot([frame.x_lo, x_end], [frame.x_lo * roof.value, x_end * roof.value],
                                     color=ROOF_COLOR, linestyle=_style(roof),
                                     linewidth=1.8 if roof.key == "dram" else 1.2, gid=f"roof:{roof.key}",
                                     label=roof.label, zorder=2)
    for roof in compute:
        x_start = roof.value / dram.value if dram else frame.x_lo
        (drawn[roof.key],) = ax.plot([x_start, frame.x_hi], [roof.value, roof.value], color=ROOF_COLOR, linewidth=1.6,
                                     gid=f"roof:{roof.key}", label=roof.label, zorder=2)
        if dram:
            ax.plot([x_start], [roof.value], marker="D", markersize=4.5, color=ROOF_COLOR, gid=f"ridge:{roof.key}", zorder=3)
            guides += ax.plot([x_start, x_start], [frame.y_lo, roof.value], color="#999999", linestyle=":",
                              linewidth=0.8, gid=f"ridge_line:{roof.key}", zorder=1)
            texts.append(ax.text(x_start * 10**0.02, frame.y_lo * 10**0.06, f"ridge {x_start:.3g} FLOP/B",
                                 rotation=90, ha="left", va="bottom", fontsize=7, color="#666666",
                                 gid=f"ridge_label:{roof.key}"))
    for roof in achievable:
        x_start = roof.value / dram.value if dram else frame.x_lo
        (drawn[roof.key],) = ax.plot([x_start, frame.x_hi], [roof.value, roof.value], color=ROOF_COLOR, linewidth=1.1,
                                     linestyle=_style(roof), gid=f"roof:{roof.key}", label=roof.label, zorder=2)
    return texts + _roof_labels(ax, memory, compute + achievable, frame, dram, drawn, guides, texts, avoid or [])


def _style(roof: RoofLine) -> str | tuple:
    return ACHIEVABLE_STYLE if roof.kind == "achievable" else MEMORY_STYLES.get(roof.key, "-")


def _roof_labels(ax: Axes, memory: list[RoofLine], flat: list[RoofLine], frame: Frame, dram: RoofLine | None,
                 drawn: dict[str, Line2D], guides: list[Line2D], fixed: list, avoid: list[Box]) -> list:
    """The flat (compute) roofs' labels first, at the right end where they can, then the sloped
    (memory) ones; those with no clean spot on their line share one key block."""
    renderer = ax.figure.canvas.get_renderer()
    field_ = LabelField(ax, renderer, {k: display_path(line) for k, line in drawn.items()},
                        [display_path(g) for g in guides], [], list(avoid))
    for text in [*fixed, *(t for t in ax.texts if t.get_gid() == "strip:label")]:
        field_.keep(text)
    texts, keyed = [], []
    for roof in flat:
        x_start = roof.value / dram.value if dram else frame.x_lo
        text = flat_label(field_, roof.key, roof.label, roof.value, x_start, frame.x_hi, below=roof.kind == "achievable")
        (texts.append(text) if text is not None else keyed.append(roof))
    left = float(ax.transAxes.inverted().transform(ax.transData.transform((frame.strip_hi, frame.y_hi)))[0])

    def key(roofs: list[RoofLine]) -> list:  # before the memory labels: the top left is still free
        return roof_key(field_, [KeyEntry(r.key, r.label, _style(r), drawn[r.key].get_linewidth()) for r in roofs],
                        left) if roofs else []

    block = key(keyed)
    top_peak = max((r.value for r in flat if r.kind == "compute"), default=frame.y_hi)
    sloped = []
    for roof in memory:
        x_end = min(top_peak / roof.value, frame.x_hi)
        text = slope_label(field_, roof.key, roof.label, roof.value, frame.strip_hi, x_end)
        (texts.append(text) if text is not None else sloped.append(roof))
    if sloped:  # the key again, with these too
        remove_key(field_, block)
        block = key(keyed + sloped)
    return texts + [a for a in block if isinstance(a, Text)]
