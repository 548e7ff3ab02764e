"""Rendering a DiffReport (analysis/diff.py): a rich table, markdown, and the JSON document.

Renderers return strings, dicts or rich renderables; they never print and compute nothing new.
"""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from rooflinectl.analysis.diff import DiffReport, GroupChange


def movement(change: GroupChange) -> str:
    """'up 2.1x, right 1.0x, eff 40% -> 85%, memory -> compute' style summary."""
    parts = []
    if math.isfinite(change.perf_ratio) and change.perf_ratio > 0:
        parts.append(f"{'up' if change.perf_ratio >= 1 else 'down'} {change.perf_ratio:.2f}x")
    if change.base_intensity > 0 and change.new_intensity > 0:
        ratio = change.new_intensity / change.base_intensity
        parts.append(f"{'right' if ratio >= 1 else 'left'} {ratio:.2f}x")
    if math.isfinite(change.base_efficiency) and math.isfinite(change.new_efficiency):
        parts.append(f"eff {change.base_efficiency:.0%} -> {change.new_efficiency:.0%}")
    if change.base_bound != change.new_bound:
        parts.append(f"{change.base_bound or '?'} -> {change.new_bound or '?'}")
    return ", ".join(parts) or "-"


def _finite_or_none(values: dict[str, Any]) -> dict[str, Any]:
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in values.items()}


def change_dict(change: GroupChange) -> dict[str, Any]:
    out = asdict(change)
    out.update(delta_s=change.delta_s, delta_pct=change.delta_pct, movement=movement(change))
    return _finite_or_none(out)


def diff_dict(report: DiffReport, fail_on_regression: float | None = None) -> dict[str, Any]:
    """The JSON document of `rooflinectl diff --format json`."""
    return {
        "measure": report.measure, "base_total_s": report.base_total_s, "new_total_s": report.new_total_s,
        "total_delta_pct": report.total_delta_pct, "base_kernel_s": report.base_kernel_s,
        "new_kernel_s": report.new_kernel_s, "notes": report.notes, "incomplete": report.incomplete,
        "changed": [change_dict(g) for g in report.changed], "new": report.new, "vanished": report.vanished,
        "fail_on_regression": fail_on_regression,
        "regressions": report.regressions(fail_on_regression) if fail_on_regression is not None else [],
    }


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f} ms"


def _pct(value: float) -> str:
    return f"{value:+.1f}%" if math.isfinite(value) else "new"


def _headline(report: DiffReport, pct: float | None) -> str:
    headline = (f"{report.measure} per iteration: {_ms(report.base_total_s)} -> {_ms(report.new_total_s)} "
            f"({_pct(report.total_delta_pct)}); {len(report.changed)} matched, {len(report.new)} new, "
            f"{len(report.vanished)} vanished group(s)")
    if pct is not None:
        regressions = report.regressions(pct)
        headline += f"; regression > {pct:g}%: " + ("; ".join(regressions) if regressions else "none")
    if report.incomplete:
        headline = f"INCOMPLETE PROFILE ({'; '.join(report.incomplete)}): no gate passes on it. " + headline
    return headline + "."


def diff_renderable(report: DiffReport, pct: float | None = None, top: int = 20) -> RenderableType:
    """A rich table of the largest changes, then new and vanished groups and the verdict."""
    table = Table(title="rooflinectl diff", title_justify="left")
    for name in ("group", "base", "new", "change", "roofline move", "match"):
        table.add_column(name, justify="right" if name in ("base", "new", "change") else "left")
    for g in report.changed[:top]:
        style = "red" if g.delta_s > 0 else "green"
        table.add_row(g.label, _ms(g.base_time_s), _ms(g.new_time_s),
                      Text(_pct(g.delta_pct), style=style), movement(g), g.match)
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
                     f"{_pct(g.delta_pct)} | {movement(g)} | {g.match} |")
    for title, rows in (("New", report.new), ("Vanished", report.vanished)):
        if rows:
            lines += ["", f"**{title}:** " + "; ".join(f"`{r['label']}` {_ms(r['time_s'])}" for r in rows[:top])]
    lines += [f"_{note}_" for note in report.notes]
    return "\n".join(lines) + "\n"
