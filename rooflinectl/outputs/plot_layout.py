"""Label placement without overlaps: greedy candidate positions, then a few repulsion passes.

Works in display pixels on a fixed-size figure (no layout engine moves the axes afterwards),
so the boxes measured here are the boxes that get drawn. Obstacles are other labels (roof
labels, ridge labels), the point markers themselves, and the roof lines (a label across a roof
hides where the roof is).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from matplotlib.axes import Axes
from matplotlib.backend_bases import RendererBase
from matplotlib.lines import Line2D
from matplotlib.path import Path
from matplotlib.text import Annotation, Text
from matplotlib.transforms import Bbox

Box = tuple[float, float, float, float]  # x0, y0, x1, y1 in pixels

_DIRECTIONS = [(1, 1), (1, -1), (-1, 1), (-1, -1), (1, 0), (-1, 0), (0, 1), (0, -1)]


@dataclass
class LabelSpec:
    """One label to place: its anchor (data coordinates), text, and the marker radius in points."""

    x: float
    y: float
    text: str
    radius_pt: float
    color: str = "#111111"
    gid: str = ""


def overlap(a: Box, b: Box) -> float:
    """Area two boxes share, square pixels."""
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    return w * h if w > 0 and h > 0 else 0.0


def _outside(box: Box, frame: Box) -> float:
    w, h = box[2] - box[0], box[3] - box[1]
    return w * h - overlap(box, frame)


def _box(cx: float, cy: float, w: float, h: float) -> Box:
    return (cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2)


def display_path(line: Line2D) -> Path:
    """A drawn line in display pixels (a straight roof on log axes is straight on screen too)."""
    return line.get_transform().transform_path(line.get_path())


def roof_paths(ax: Axes) -> list[Path]:
    """The roof lines drawn on the axes (gid `roof:...`), in display pixels."""
    return [display_path(line) for line in ax.get_lines() if str(line.get_gid() or "").startswith("roof:")]


def crossings(box: Box, roofs: list[Path]) -> int:
    """How many roof lines pass through the box."""
    bbox = Bbox.from_extents(*box)
    return sum(path.intersects_bbox(bbox, filled=False) for path in roofs)


def place_labels(ax: Axes, renderer: RendererBase, specs: list[LabelSpec], obstacles: list[Text],
                 point_boxes: list[Box], fontsize: float = 8.5) -> list[Annotation]:
    """Annotate each spec near its point where it covers nothing else; a leader line joins them."""
    dpi_scale = ax.figure.dpi / 72.0
    frame = ax.get_window_extent(renderer)
    frame_box: Box = (frame.x0 + 2, frame.y0 + 2, frame.x1 - 2, frame.y1 - 2)
    fixed: list[Box] = [b for t in obstacles if t.get_visible() and t.get_text() for b in text_boxes(t, renderer)]
    placed: list[Box] = []
    annotations: list[Annotation] = []
    roofs = roof_paths(ax)
    for spec in specs:
        ann = ax.annotate(spec.text, (spec.x, spec.y), xytext=(0, 0), textcoords="offset points", ha="center",
                          va="center", fontsize=fontsize, color=spec.color, gid=spec.gid, zorder=6,
                          bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.75},
                          arrowprops={"arrowstyle": "-", "color": "#777777", "lw": 0.6, "shrinkA": 0,
                                      "shrinkB": spec.radius_pt})
        extent = ann.get_window_extent(renderer)
        w, h = extent.width + 4, extent.height + 2
        ax_px, ay_px = ax.transData.transform((spec.x, spec.y))
        r_px = spec.radius_pt * dpi_scale
        best: tuple[float, float, float] | None = None
        for step in (1.0, 1.8, 2.8, 4.0, 5.5):
            for dx, dy in _DIRECTIONS:
                gap = (r_px + 3) * step + 2
                cx = ax_px + dx * (gap + w / 2)
                cy = ay_px + dy * (gap + h / 2)
                box = _box(cx, cy, w, h)
                cost = (sum(overlap(box, o) for o in placed) * 3 + sum(overlap(box, o) for o in fixed) * 2
                        + sum(overlap(box, o) for o in point_boxes) + _outside(box, frame_box) * 4
                        + 2 * w * h * crossings(box, roofs)
                        + 0.02 * w * h * (step - 1) + 0.001 * w * h * (abs(dx) + abs(dy) != 2))
                if best is None or cost < best[0] - 1e-9:
                    best = (cost, cx, cy)
            if best is not None and best[0] < 0.02 * w * h * step:
                break
        assert best is not None
        cx, cy = _relax(best[1], best[2], w, h, placed + fixed, frame_box)
        if crossings(_box(cx, cy, w, h), roofs) > crossings(_box(best[1], best[2], w, h), roofs):
            cx, cy = best[1], best[2]  # the repulsion pushed it onto a roof line: keep the chosen spot
        placed.append(_box(cx, cy, w, h))
        ann.xyann = ((cx - ax_px) / dpi_scale, (cy - ay_px) / dpi_scale)
        annotations.append(ann)
    return annotations


def _relax(cx: float, cy: float, w: float, h: float, others: list[Box], frame: Box, passes: int = 40) -> tuple[float, float]:
    """Push a box out of the boxes it still overlaps, along the shorter way out, inside the frame."""
    for _ in range(passes):
        moved = False
        for o in others:
            box = _box(cx, cy, w, h)
            if overlap(box, o) <= 0:
                continue
            push_x = min(box[2] - o[0], o[2] - box[0])
            push_y = min(box[3] - o[1], o[3] - box[1])
            if push_y <= push_x:
                cy += (push_y + 1) * (1 if cy >= (o[1] + o[3]) / 2 else -1)
            else:
                cx += (push_x + 1) * (1 if cx >= (o[0] + o[2]) / 2 else -1)
            moved = True
        cx = min(max(cx, frame[0] + w / 2), frame[2] - w / 2)
        cy = min(max(cy, frame[1] + h / 2), frame[3] - h / 2)
        if not moved:
            break
    return cx, cy


def marker_boxes(ax: Axes, xs: list[float], ys: list[float], sizes_pt2: list[float]) -> list[Box]:
    """Pixel boxes of scatter markers (size in points squared, as scatter takes it)."""
    scale = ax.figure.dpi / 72.0
    boxes = []
    for x, y, s in zip(xs, ys, sizes_pt2, strict=True):
        px, py = ax.transData.transform((x, y))
        r = math.sqrt(s) / 2 * scale
        boxes.append((px - r, py - r, px + r, py + r))
    return boxes


def text_boxes(text: Text, renderer: RendererBase, pieces: int = 16) -> list[Box]:
    """Pixel boxes covering a text; a rotated text is covered by small boxes along its slant.

    The axis-aligned box of a label rotated along a sloped roof covers a whole triangle of empty
    chart; the small boxes follow the text itself.
    """
    if isinstance(text, Annotation):
        text.update_positions(renderer)  # an annotation's text moves only when it is measured or drawn
    extent = Text.get_window_extent(text, renderer)  # the text only, not an annotation's leader line
    angle = text.get_rotation() % 180
    if angle < 1 or abs(angle - 90) < 1:
        return [tuple(extent.extents)]
    rad = math.radians(angle)
    thickness = text.get_fontsize() * text.figure.dpi / 72.0 * 1.3  # one line of text, in pixels
    half = thickness / 2
    x0, y0, x1, y1 = extent.extents
    boxes = []
    for i in range(pieces):
        f = (i + 0.5) / pieces
        cx = x0 + half * math.sin(rad) + f * (x1 - x0 - 2 * half * math.sin(rad))
        cy = (y0 + half * math.cos(rad) + f * (y1 - y0 - 2 * half * math.cos(rad))) if angle < 90 else (
            y1 - half * abs(math.cos(rad)) - f * (y1 - y0 - 2 * half * abs(math.cos(rad))))
        w = (x1 - x0) / pieces + half
        boxes.append((cx - w / 2, cy - half, cx + w / 2, cy + half))
    return boxes


def coincident_groups(xs: list[float], ys: list[float], decades: float = 0.03) -> list[list[int]]:
    """Indices of points drawn on one spot (log-log distance under `decades`), in input order:
    one label for such a pile (`1,2,3. mm`) instead of labels fighting over one marker."""
    groups: list[list[int]] = []
    for i, (x, y) in enumerate(zip(xs, ys, strict=True)):
        for group in groups:
            j = group[0]
            if (abs(math.log10(x / xs[j])) < decades and abs(math.log10(y / ys[j])) < decades):
                group.append(i)
                break
        else:
            groups.append([i])
    return groups


def fitted_list(measure: Callable[[str], float], width_px: float, head: str, items: list[str]) -> str:
    """`head` and as many of `items` as fit `width_px` (measured by `measure`), then "+N more":
    a footer line never runs off the figure, and what it leaves out is counted."""
    for shown in range(len(items), -1, -1):
        rest = len(items) - shown
        text = head + ", ".join(items[:shown]) + (f"{', ' if shown else ''}+{rest} more" if rest else "")
        if measure(text) <= width_px:
            return text
    return head
