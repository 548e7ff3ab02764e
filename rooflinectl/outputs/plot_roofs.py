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
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from rooflinectl.ceilings.model import Ceilings
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

    avoid: pixel boxes (point markers) that the sloped memory-roof labels should not cover.
    """
    texts: list = []
    avoid = list(avoid or [])
    memory = [r for r in lines if r.kind == "memory"]
    compute = [r for r in lines if r.kind == "compute"]
    top_peak = max((r.value for r in compute), default=frame.y_hi)
    dram = next((r for r in memory if r.key == "dram"), memory[0] if memory else None)
    for roof in memory:
        x_end = min(top_peak / roof.value, frame.x_hi)
        ax.plot([frame.x_lo, x_end], [frame.x_lo * roof.value, x_end * roof.value], color=ROOF_COLOR,
                linestyle=MEMORY_STYLES.get(roof.key, "-"), linewidth=1.8 if roof.key == "dram" else 1.2,
                gid=f"roof:{roof.key}", label=roof.label, zorder=2)
        texts.append(_slope_label(ax, roof, frame, x_end, avoid + _extents(ax, texts)))
    for roof in compute:
        x_start = roof.value / dram.value if dram else frame.x_lo
        ax.plot([x_start, frame.x_hi], [roof.value, roof.value], color=ROOF_COLOR, linewidth=1.6,
                gid=f"roof:{roof.key}", label=roof.label, zorder=2)
        if dram:
            ax.plot([x_start], [roof.value], marker="D", markersize=4.5, color=ROOF_COLOR, gid=f"ridge:{roof.key}", zorder=3)
            ax.plot([x_start, x_start], [frame.y_lo, roof.value], color="#999999", linestyle=":", linewidth=0.8,
                    gid=f"ridge_line:{roof.key}", zorder=1)
            texts.append(ax.text(x_start * 10**0.02, frame.y_lo * 10**0.06, f"ridge {x_start:.3g} FLOP/B",
                                 rotation=90, ha="left", va="bottom", fontsize=7, color="#666666",
                                 gid=f"ridge_label:{roof.key}"))
    for roof in [r for r in lines if r.kind == "achievable"]:
        x_start = roof.value / dram.value if dram else frame.x_lo
        ax.plot([x_start, frame.x_hi], [roof.value, roof.value], color=ROOF_COLOR, linewidth=1.1,
                linestyle=ACHIEVABLE_STYLE, gid=f"roof:{roof.key}", label=roof.label, zorder=2)
        compute.append(roof)
    for roof in compute:
        x_start = roof.value / dram.value if dram else frame.x_lo
        texts.append(_flat_label(ax, roof, frame, x_start, avoid + _extents(ax, texts)))
    return texts


def _extents(ax: Axes, texts: list) -> list[Box]:
    renderer = ax.figure.canvas.get_renderer()
    return [tuple(t.get_window_extent(renderer).extents) for t in texts]


def _slope_label(ax: Axes, roof: RoofLine, frame: Frame, x_end: float, avoid: list[Box]):
    """A memory roof's label on its line, rotated to the line's on-screen angle, where it covers least."""
    log_lo, log_hi = math.log10(frame.strip_hi), math.log10(x_end)
    p0 = ax.transData.transform((1.0, roof.value))
    p1 = ax.transData.transform((10.0, roof.value * 10))
    angle = math.degrees(math.atan2(p1[1] - p0[1], p1[0] - p0[0]))
    text = ax.annotate(roof.label, (1.0, 1.0), xytext=(0, 4), textcoords="offset points", rotation=angle,
                       rotation_mode="anchor", ha="left", va="bottom", fontsize=8.5, color=ROOF_COLOR,
                       gid=f"roof_label:{roof.key}", zorder=3)
    renderer = ax.figure.canvas.get_renderer()
    best: tuple[float, float] | None = None
    for fraction in (0.08, 0.14, 0.2, 0.28, 0.36, 0.44, 0.52, 0.6):
        x = 10 ** (log_lo + fraction * (log_hi - log_lo))
        text.xy = (x, x * roof.value)
        box = text.get_window_extent(renderer)
        cost = sum(_box_overlap(tuple(box.extents), b) for b in avoid) + fraction
        if best is None or cost < best[0]:
            best = (cost, x)
    assert best is not None
    text.xy = (best[1], best[1] * roof.value)
    return text


def _flat_label(ax: Axes, roof: RoofLine, frame: Frame, x_start: float, avoid: list[Box]):
    """A compute roof's label just above its line: at the right end unless points sit there."""
    below = roof.kind == "achievable"  # under its dashed line: the roof's own label sits just above it
    text = ax.annotate(roof.label, (frame.x_hi, roof.value), xytext=(-4, -2 if below else 2), textcoords="offset points",
                       ha="right", va="top" if below else "bottom", fontsize=8.5, color=ROOF_COLOR,
                       gid=f"roof_label:{roof.key}", zorder=3)
    renderer = ax.figure.canvas.get_renderer()
    log_lo, log_hi = math.log10(max(x_start, frame.x_lo)), math.log10(frame.x_hi)
    best: tuple[float, float] | None = None
    for fraction in (1.0, 0.85, 0.7, 0.55, 0.4, 0.25, 0.1):
        x = 10 ** (log_lo + fraction * (log_hi - log_lo))
        text.xy = (x, roof.value)
        box = tuple(text.get_window_extent(renderer).extents)
        hanging = box[0] < ax.transData.transform((x_start, roof.value))[0]  # past its line's left end
        cost = sum(_box_overlap(box, b) for b in avoid) + (1.0 - fraction) + 2.0 * hanging
        if best is None or cost < best[0]:
            best = (cost, x)
    if best is not None:
        text.xy = (best[1], roof.value)
    return text


def _box_overlap(a: Box, b: Box) -> float:
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    return w * h if w > 0 and h > 0 else 0.0
