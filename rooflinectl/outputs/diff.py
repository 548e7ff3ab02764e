"""Compare two profiles: per kernel group, the change in time and the move on the roofline.

Groups are matched in passes, each on the rows still unmatched, from strict to loose:
  1. kernel, op, module, shapes, dtype        (the same group)
  2. kernel and op without numeric/hash suffix (a re-compiled Triton kernel: _0 -> _1)
  3. op, module, shapes, dtype                 (another library kernel for the same work)
  4. suffix-free kernel, op, module            (the same code on other shapes)
  5. op, module, when unique on both sides
Within a key, candidates pair up by time (largest first), then by position: deterministic.
Times are per iteration (summary "iterations") so runs of different lengths compare.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from rooflinectl.profile_model import ProfileData

_SUFFIX = re.compile(r"(_[0-9]+|_[0-9a-f]{8,})+$")
MIN_GROUP_SHARE = 0.01  # a group regression counts only if it adds this share of the base total


def normalise_kernel(name: str) -> str:
    """Drop the numeric or hash suffix compilers add: triton_poi_fused_add_0 -> triton_poi_fused_add."""
    return _SUFFIX.sub("", name)


@dataclass
class GroupChange:
    label: str
    match: str  # exact | suffix | op-shapes | kernel-op | op-module
    base_kernel: str
    new_kernel: str
    base_time_s: float
    new_time_s: float
    base_efficiency: float
    new_efficiency: float
    base_intensity: float
    new_intensity: float
    base_bound: str
    new_bound: str
    perf_ratio: float  # achieved FLOP/s (or B/s when no FLOPs) new / base: the vertical move

    @property
    def delta_s(self) -> float:
        return self.new_time_s - self.base_time_s

    @property
    def delta_pct(self) -> float:
        return 100.0 * self.delta_s / self.base_time_s if self.base_time_s > 0 else math.inf

    def movement(self) -> str:
        """'up 2.1x, right 1.0x, eff 40% -> 85%, memory -> compute' style summary."""
        parts = []
        if math.isfinite(self.perf_ratio) and self.perf_ratio > 0:
            parts.append(f"{'up' if self.perf_ratio >= 1 else 'down'} {self.perf_ratio:.2f}x")
        if self.base_intensity > 0 and self.new_intensity > 0:
            ratio = self.new_intensity / self.base_intensity
            parts.append(f"{'right' if ratio >= 1 else 'left'} {ratio:.2f}x")
        if math.isfinite(self.base_efficiency) and math.isfinite(self.new_efficiency):
            parts.append(f"eff {self.base_efficiency:.0%} -> {self.new_efficiency:.0%}")
        if self.base_bound != self.new_bound:
            parts.append(f"{self.base_bound or '?'} -> {self.new_bound or '?'}")
        return ", ".join(parts) or "-"

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.update(delta_s=self.delta_s, delta_pct=self.delta_pct, movement=self.movement())
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in out.items()}


@dataclass
class DiffReport:
    changed: list[GroupChange]
    new: list[dict[str, Any]]  # groups only in NEW: label, kernel, time_s
    vanished: list[dict[str, Any]]  # groups only in BASE
    base_total_s: float  # the compared time: window if both profiles have one, else kernel time
    new_total_s: float
    measure: str  # "window" or "kernel time"
    base_kernel_s: float
    new_kernel_s: float
    notes: list[str] = field(default_factory=list)

    @property
    def total_delta_pct(self) -> float:
        return 100.0 * (self.new_total_s - self.base_total_s) / self.base_total_s if self.base_total_s > 0 else 0.0

    def regressions(self, pct: float) -> list[str]:
        """Sentences for what regressed by more than pct percent; empty when nothing did."""
        out = []
        if self.total_delta_pct > pct:
            out.append(f"total {self.measure} grew {self.total_delta_pct:.1f}% (> {pct:g}%)")
        for g in self.changed:
            if g.delta_pct > pct and g.delta_s >= MIN_GROUP_SHARE * self.base_kernel_s:
                out.append(f"{g.label} grew {g.delta_pct:.1f}% (+{g.delta_s * 1e3:.3f} ms)")
        return out

    def to_dict(self, fail_on_regression: float | None = None) -> dict[str, Any]:
        return {
            "measure": self.measure, "base_total_s": self.base_total_s, "new_total_s": self.new_total_s,
            "total_delta_pct": self.total_delta_pct, "base_kernel_s": self.base_kernel_s,
            "new_kernel_s": self.new_kernel_s, "notes": self.notes,
            "changed": [g.to_dict() for g in self.changed], "new": self.new, "vanished": self.vanished,
            "fail_on_regression": fail_on_regression,
            "regressions": self.regressions(fail_on_regression) if fail_on_regression is not None else [],
        }


def _col(row: pd.Series, key: str, default: Any = "") -> Any:
    value = row.get(key, default)
    if value is None or (isinstance(value, float) and math.isnan(value) and not isinstance(default, float)):
        return default
    return value


def _label(row: pd.Series) -> str:
    op = str(_col(row, "op")) or str(_col(row, "kernel"))
    module = str(_col(row, "module"))
    shapes = str(_col(row, "shapes"))
    return f"{op}{' @ ' + module if module else ''}{' ' + shapes if shapes else ''}"


def _k(r: pd.Series) -> str:
    return normalise_kernel(str(_col(r, "kernel")))


def _o(r: pd.Series) -> str:
    return normalise_kernel(str(_col(r, "op")))


def _s(r: pd.Series, key: str) -> str:
    return str(_col(r, key))


_KEYS = (
    ("exact", lambda r: (_s(r, "kernel"), _s(r, "op"), _s(r, "module"), _s(r, "shapes"), _s(r, "dtype"))),
    ("suffix", lambda r: (_k(r), _o(r), _s(r, "module"), _s(r, "shapes"), _s(r, "dtype"))),
    ("op-shapes", lambda r: (_o(r), _s(r, "module"), _s(r, "shapes"), _s(r, "dtype"))),
    ("kernel-op", lambda r: (_k(r), _o(r), _s(r, "module"))),
    ("op-module", lambda r: (_o(r), _s(r, "module"))),
)


def match_groups(base: pd.DataFrame, new: pd.DataFrame) -> list[tuple[int, int, str]]:
    """(base position, new position, pass name) for every matched pair, in pass order."""
    free_b, free_n = set(range(len(base))), set(range(len(new)))
    pairs: list[tuple[int, int, str]] = []
    for name, key in _KEYS:
        by_b: dict[Any, list[int]] = defaultdict(list)
        by_n: dict[Any, list[int]] = defaultdict(list)
        for i in sorted(free_b):
            by_b[key(base.iloc[i])].append(i)
        for j in sorted(free_n):
            by_n[key(new.iloc[j])].append(j)
        for k in sorted(set(by_b) & set(by_n), key=repr):
            bs, ns = by_b[k], by_n[k]
            if name == "op-module" and (len(bs) != 1 or len(ns) != 1):
                continue
            bs = sorted(bs, key=lambda i: (-float(base.iloc[i]["time_s"]), i))
            ns = sorted(ns, key=lambda j: (-float(new.iloc[j]["time_s"]), j))
            for i, j in zip(bs, ns, strict=False):
                pairs.append((i, j, name))
                free_b.discard(i)
                free_n.discard(j)
    return pairs


def _per_iter(profile: ProfileData) -> float:
    iterations = profile.summary.get("iterations") or 1
    try:
        return max(1.0, float(iterations))
    except (TypeError, ValueError):
        return 1.0


def _f(row: pd.Series, key: str) -> float:
    try:
        value = float(row.get(key, math.nan))
    except (TypeError, ValueError):
        return math.nan
    return value


def diff_profiles(base: ProfileData, new: ProfileData) -> DiffReport:
    """Matched groups (sorted by |change|, then label), new and vanished groups, and totals."""
    b, n = base.kernels.reset_index(drop=True), new.kernels.reset_index(drop=True)
    ib, in_ = _per_iter(base), _per_iter(new)
    pairs = match_groups(b, n)
    changed = []
    for i, j, how in pairs:
        rb, rn = b.iloc[i], n.iloc[j]
        flops_b, flops_n = _f(rb, "achieved_flops_per_s"), _f(rn, "achieved_flops_per_s")
        if not (flops_b > 0 and flops_n > 0):
            flops_b, flops_n = _f(rb, "achieved_bytes_per_s"), _f(rn, "achieved_bytes_per_s")
        changed.append(GroupChange(
            label=_label(rn), match=how, base_kernel=str(_col(rb, "kernel")), new_kernel=str(_col(rn, "kernel")),
            base_time_s=float(rb["time_s"]) / ib, new_time_s=float(rn["time_s"]) / in_,
            base_efficiency=_f(rb, "efficiency"), new_efficiency=_f(rn, "efficiency"),
            base_intensity=_f(rb, "intensity"), new_intensity=_f(rn, "intensity"),
            base_bound=str(_col(rb, "bound")), new_bound=str(_col(rn, "bound")),
            perf_ratio=flops_n / flops_b if flops_b > 0 and flops_n > 0 else math.nan,
        ))
    changed.sort(key=lambda g: (-abs(round(g.delta_s, 12)), g.label, g.base_kernel))
    matched_b = {i for i, _, _ in pairs}
    matched_n = {j for _, j, _ in pairs}

    def lonely(table: pd.DataFrame, taken: set[int], per: float) -> list[dict[str, Any]]:
        rows = [{"label": _label(table.iloc[k]), "kernel": str(_col(table.iloc[k], "kernel")),
                 "time_s": float(table.iloc[k]["time_s"]) / per} for k in range(len(table)) if k not in taken]
        return sorted(rows, key=lambda r: (-r["time_s"], r["label"], r["kernel"]))

    kernel_b, kernel_n = float(b["time_s"].sum()) / ib, float(n["time_s"].sum()) / in_
    win_b, win_n = base.summary.get("window_s"), new.summary.get("window_s")
    notes = []
    if win_b and win_n:
        totals, measure = (float(win_b) / ib, float(win_n) / in_), "window"
    else:
        totals, measure = (kernel_b, kernel_n), "kernel time"
        notes.append("no window in one of the profiles: comparing total kernel time")
    if base.ceilings.device_name != new.ceilings.device_name:
        notes.append(f"different devices: {base.ceilings.device_name} vs {new.ceilings.device_name}")
    return DiffReport(changed=changed, new=lonely(n, matched_n, in_), vanished=lonely(b, matched_b, ib),
                      base_total_s=totals[0], new_total_s=totals[1], measure=measure,
                      base_kernel_s=kernel_b, new_kernel_s=kernel_n, notes=notes)


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f} ms"


def _pct(value: float) -> str:
    return f"{value:+.1f}%" if math.isfinite(value) else "new"


def _headline(report: DiffReport, pct: float | None) -> str:
    text = (f"{report.measure} per iteration: {_ms(report.base_total_s)} -> {_ms(report.new_total_s)} "
            f"({_pct(report.total_delta_pct)}); {len(report.changed)} matched, {len(report.new)} new, "
            f"{len(report.vanished)} vanished group(s)")
    if pct is not None:
        regressions = report.regressions(pct)
        text += f"; regression > {pct:g}%: " + ("; ".join(regressions) if regressions else "none")
    return text + "."


def diff_renderable(report: DiffReport, pct: float | None = None, top: int = 20) -> RenderableType:
    """A rich table of the largest changes, then new and vanished groups and the verdict."""
    table = Table(title="rooflinectl diff", title_justify="left")
    for name in ("group", "base", "new", "change", "roofline move", "match"):
        table.add_column(name, justify="right" if name in ("base", "new", "change") else "left")
    for g in report.changed[:top]:
        style = "red" if g.delta_s > 0 else "green"
        table.add_row(g.label, _ms(g.base_time_s), _ms(g.new_time_s),
                      Text(_pct(g.delta_pct), style=style), g.movement(), g.match)
    parts: list[RenderableType] = [table]
    for title, rows in (("new", report.new), ("vanished", report.vanished)):
        for r in rows[:top]:
            parts.append(Text(f"{title}: {r['label']} ({r['kernel']}) {_ms(r['time_s'])}"))
    parts += [Text(note, style="dim") for note in report.notes]
    parts.append(Text(_headline(report, pct), style="bold"))
    return Group(*parts)


def render_diff_markdown(report: DiffReport, pct: float | None = None, top: int = 20) -> str:
    lines = ["## rooflinectl diff", "", _headline(report, pct), "",
             "| group | base | new | change | roofline move | match |", "|---|---:|---:|---:|---|---|"]
    for g in report.changed[:top]:
        lines.append(f"| {g.label.replace('|', '/')} | {_ms(g.base_time_s)} | {_ms(g.new_time_s)} | "
                     f"{_pct(g.delta_pct)} | {g.movement()} | {g.match} |")
    for title, rows in (("New", report.new), ("Vanished", report.vanished)):
        if rows:
            lines += ["", f"**{title}:** " + "; ".join(f"`{r['label']}` {_ms(r['time_s'])}" for r in rows[:top])]
    lines += [f"_{note}_" for note in report.notes]
    return "\n".join(lines) + "\n"
