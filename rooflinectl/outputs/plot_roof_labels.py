"""Where the roofs' labels go: each along its own line, at the spot that crosses no other roof
and covers no other label; a label with no such spot goes into a key (a sample of its line and
the label, as a legend has) put where the key crosses nothing.

Why: two memory roofs within 2x of each other (the H200's DRAM 4.7 TB/s and L2 8.5 TB/s) lie
closer on a log chart than a line of text is tall, so a label above the lower roof was drawn
across the upper one, and a long label under a compute roof ran across the sloped memory roofs.
Hard rules rule a spot out: crossing another roof's line, covering another label's box
(get_window_extent: the whole box of a slanted label), or leaving the axes. Soft ones rank the
rest: point markers covered, ridge guides crossed, distance from the preferred spot.
All in display pixels on the fixed-size figure (plot_layout.py says why that holds).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from matplotlib.axes import Axes
from matplotlib.backend_bases import RendererBase
from matplotlib.path import Path
from matplotlib.text import Annotation, Text
from matplotlib.transforms import Bbox

from rooflinectl.outputs.plot_layout import Box, overlap, text_boxes

HARD = 1e6  # the cost of one broken hard rule: any clean spot beats every spot that breaks one
CROWDED = 5.0  # a spot whose soft cost is above this (some 6 markers covered) is worse than the key
FONT_SIZE = 8.5
COLOR = "#333333"
SLOPE_FRACTIONS = tuple(0.04 + 0.04 * i for i in range(23))  # along a memory roof, left to right
FLAT_FRACTIONS = tuple(1.0 - 0.075 * i for i in range(13))  # along a compute roof, right to left
_GROW_PX = 1.5  # a label's pieces are grown this much before the crossing test: no line grazes a glyph


def _grown(box: Box, px: float = _GROW_PX) -> Bbox:
    return Bbox.from_extents(box[0] - px, box[1] - px, box[2] + px, box[3] + px)


def extent(text: Text, renderer: RendererBase) -> Box:
    """The text's box where it is now (an annotation's text moves only when measured or drawn)."""
    if isinstance(text, Annotation):
        text.update_positions(renderer)
    return tuple(Text.get_window_extent(text, renderer).extents)


@dataclass
class LabelField:
    """What a roof label keeps clear of; labels join `labels` as they are placed."""

    ax: Axes
    renderer: RendererBase
    roofs: dict[str, Path]  # each roof line, by its key: never crossed
    guides: list[Path] = field(default_factory=list)  # ridge guides: crossed only if nothing better
    labels: list[Box] = field(default_factory=list)  # placed labels' boxes: never covered
    points: list[Box] = field(default_factory=list)  # point markers: covered only if nothing better

    def __post_init__(self) -> None:  # groups drawn on one spot (centres within 4 px) are one marker to cover
        spots: list[Box] = []
        for b in sorted(self.points, key=lambda b: b[0] - b[2]):  # the largest first: it stands for the pile
            if all(abs(b[0] + b[2] - s[0] - s[2]) > 8 or abs(b[1] + b[3] - s[1] - s[3]) > 8 for s in spots):
                spots.append(b)
        self.points = spots

    def frame(self) -> Box:
        b = self.ax.get_window_extent(self.renderer)
        return (b.x0 + 2, b.y0 + 2, b.x1 - 2, b.y1 - 2)

    def cost(self, pieces: list[Box], extent: Box, own: str | None) -> float:
        """HARD per broken rule, plus the soft costs (in units of about one label's worth); a spot
        that breaks a hard rule is not weighed further."""
        whole, grown = _grown(extent), [_grown(p) for p in pieces]

        def crosses(path: Path) -> bool:  # the whole box first: most lines pass far from a label
            return path.intersects_bbox(whole, filled=False) and any(path.intersects_bbox(b, filled=False) for b in grown)

        frame = self.frame()
        outside = not (extent[0] >= frame[0] and extent[1] >= frame[1] and extent[2] <= frame[2] and extent[3] <= frame[3])
        hard = (sum(crosses(path) for key, path in self.roofs.items() if key != own)
                + sum(overlap(extent, b) > 0 for b in self.labels) + outside)
        if hard:
            return HARD * hard
        near = [b for b in self.points if overlap(extent, b) > 0]
        area = max(sum((p[2] - p[0]) * (p[3] - p[1]) for p in pieces), 1.0)
        on_points = sum(overlap(p, b) for p in pieces for b in near) / area + 0.5 * sum(
            any(overlap(p, b) > 0 for p in pieces) for b in near)
        return 4.0 * on_points + 0.5 * sum(crosses(g) for g in self.guides)

    def text_cost(self, text: Text, own: str) -> float:
        return self.cost(text_boxes(text, self.renderer), extent(text, self.renderer), own)

    def keep(self, text: Text) -> None:
        self.labels.append(extent(text, self.renderer))


def _choose(field_: LabelField, text: Annotation, own: str, candidates: list[tuple[float, dict]],
            extra: Callable[[Annotation], float] | None = None) -> bool:
    """Try each (preference, settings) on the text, keep the cheapest; whether it breaks no hard rule
    and covers not too many point markers (else the key holds the label)."""
    best: tuple[float, dict] | None = None
    for preference, settings in candidates:
        _apply(text, settings)
        cost = field_.text_cost(text, own) + preference + (extra(text) if extra else 0.0)
        if best is None or cost < best[0]:
            best = (cost, settings)
    assert best is not None
    _apply(text, best[1])
    return best[0] < CROWDED


def _apply(text: Annotation, settings: dict) -> None:
    text.xy = settings["xy"]
    text.xyann = settings["offset"]
    text.set_verticalalignment(settings["va"])


def slope_label(field_: LabelField, key: str, label: str, bytes_per_s: float, x_from: float, x_to: float) -> Annotation | None:
    """A memory roof's label along its line, rotated to the line's on-screen angle, above the line
    (or under it, where the roof above is too close); None when no spot is clean (the key takes it)."""
    ax = field_.ax
    p0, p1 = ax.transData.transform((1.0, bytes_per_s)), ax.transData.transform((10.0, bytes_per_s * 10))
    angle = math.degrees(math.atan2(p1[1] - p0[1], p1[0] - p0[0]))
    text = ax.annotate(label, (x_from, x_from * bytes_per_s), xytext=(0, 4), textcoords="offset points", rotation=angle,
                       rotation_mode="anchor", ha="left", va="bottom", fontsize=FONT_SIZE, color=COLOR,
                       gid=f"roof_label:{key}", zorder=3)
    lo, hi = math.log10(x_from), math.log10(max(x_to, x_from))
    candidates = []
    for side_cost, offset, va in ((0.0, (0, 4), "bottom"), (0.15, (0, -4), "top")):
        for fraction in SLOPE_FRACTIONS:
            x = 10 ** (lo + fraction * (hi - lo))
            candidates.append((side_cost + 0.3 * fraction, {"xy": (x, x * bytes_per_s), "offset": offset, "va": va}))
    return _settle(field_, text, key, candidates)


def flat_label(field_: LabelField, key: str, label: str, flops_per_s: float, x_start: float, x_hi: float,
               below: bool) -> Annotation | None:
    """A compute roof's label just above its line (`below`: under it, for the dashed achievable
    line under its roof), right-aligned, at the right end unless something is there."""
    ax = field_.ax
    text = ax.annotate(label, (x_hi, flops_per_s), xytext=(-4, 2), textcoords="offset points", ha="right",
                       va="bottom", fontsize=FONT_SIZE, color=COLOR, gid=f"roof_label:{key}", zorder=3)
    lo, hi = math.log10(min(x_start, x_hi)), math.log10(x_hi)
    left_end = ax.transData.transform((x_start, flops_per_s))[0]
    candidates = []
    for under, offset, va in ((True, (-4, -2), "top"), (False, (-4, 2), "bottom")):
        side_cost = 0.0 if under == below else 0.25
        for fraction in FLAT_FRACTIONS:
            candidates.append((side_cost + 0.4 * (1.0 - fraction),
                               {"xy": (10 ** (lo + fraction * (hi - lo)), flops_per_s), "offset": offset, "va": va}))

    def hanging(t: Annotation) -> float:
        """Past its line's left end: up to half the label costs a little; more is over nothing it labels."""
        x0, _, x1, _ = extent(t, field_.renderer)
        past = max(0.0, min(x1, left_end) - x0) / max(x1 - x0, 1.0)
        return HARD if past > 0.5 else 1.0 * (past > 0.01)

    return _settle(field_, text, key, candidates, hanging)


def _settle(field_: LabelField, text: Annotation, key: str, candidates: list[tuple[float, dict]],
            extra: Callable[[Annotation], float] | None = None) -> Annotation | None:
    if _choose(field_, text, key, candidates, extra):
        field_.keep(text)
        return text
    text.remove()
    return None


@dataclass(frozen=True)
class KeyEntry:
    """A roof whose label went into the key: its label and how its line is drawn."""

    key: str
    label: str
    linestyle: object
    linewidth: float


_SAMPLE_PT, _GAP_PT, _ROW_PT = 14.0, 4.0, 12.5


def roof_key(field_: LabelField, entries: list[KeyEntry], left_frac: float) -> list:
    """The labels no spot on their line could hold, stacked in one block (each after a sample of
    its line) at the place in the axes where the block crosses no roof and covers no label.
    Returns the texts, then the line samples."""
    ax, scale = field_.ax, field_.ax.figure.dpi / 72.0
    texts = [ax.annotate(e.label, (0.0, 1.0), xycoords="axes fraction", xytext=(_SAMPLE_PT + _GAP_PT, -i * _ROW_PT),
                         textcoords="offset points", ha="left", va="top", fontsize=FONT_SIZE, color=COLOR,
                         gid=f"roof_label:{e.key}", zorder=5) for i, e in enumerate(entries)]
    best: tuple[float, tuple[float, float]] | None = None
    for top in (0.99, 0.95, 0.9, 0.85, 0.8, 0.74, 0.62, 0.5, 0.38, 0.26):
        for left in sorted({left_frac + 0.01, *(x for x in (0.2, 0.3, 0.4, 0.5, 0.6) if x > left_frac + 0.01)}):
            for t in texts:
                t.xy = (left, top)
            extents = [extent(t, field_.renderer) for t in texts]
            block = (extents[0][0] - (_SAMPLE_PT + _GAP_PT) * scale, min(e[1] for e in extents),
                     max(e[2] for e in extents), max(e[3] for e in extents))
            cost = field_.cost([block], block, None) + 0.2 * (0.99 - top) + 0.1 * (left - left_frac)
            if best is None or cost < best[0]:
                best = (cost, (left, top))
    assert best is not None
    to_axes = ax.transAxes.inverted()
    samples = []
    for t, e in zip(texts, entries, strict=True):
        t.xy = best[1]
        field_.keep(t)
        box = extent(t, field_.renderer)
        x0 = box[0] - (_SAMPLE_PT + _GAP_PT) * scale
        (ax0, ay), (ax1, _) = to_axes.transform([(x0, (box[1] + box[3]) / 2), (x0 + _SAMPLE_PT * scale, 0)])
        samples += ax.plot([ax0, ax1], [ay, ay], transform=ax.transAxes, color=COLOR, linestyle=e.linestyle,
                           linewidth=e.linewidth, gid=f"roof_key_sample:{e.key}", zorder=5)
    return texts + samples


def remove_key(field_: LabelField, artists: list) -> None:
    """Take a key block off the chart (to draw it again with more entries)."""
    for artist in artists:
        if isinstance(artist, Text):
            field_.labels.remove(extent(artist, field_.renderer))
        artist.remove()
