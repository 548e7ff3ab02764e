"""Rendering a DiffReport (analysis/diff.py): a rich table, markdown, and the JSON document.

Renderers return strings, dicts or rich renderables; they never print and compute nothing new.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from rooflinectl.analysis.diff import DiffReport, GroupChange
from rooflinectl.analysis.json_values import json_ready
from rooflinectl.outputs.escape import github_data, markdown, plain, rich_text
from rooflinectl.outputs.junit import JUnitSuite
from rooflinectl.outputs.plot_names import shorten_kernel_name


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


def change_dict(change: GroupChange, report: DiffReport | None = None) -> dict[str, Any]:
    out = asdict(change)
    out.update(delta_s=change.delta_s, delta_pct=change.delta_pct, movement=movement(change))
    if report is not None:
        out.update(interval_pct=report.interval_pct(change.delta_pct))
    return out


def diff_dict(report: DiffReport, fail_on_regression: float | None = None) -> dict[str, Any]:
    """The JSON document of `rooflinectl diff --format json`."""
    return json_ready({
        "measure": report.measure, "base_total_s": report.base_total_s, "new_total_s": report.new_total_s,
        "total_delta_pct": report.total_delta_pct, "base_kernel_s": report.base_kernel_s,
        "new_kernel_s": report.new_kernel_s, "notes": report.notes, "incomplete": report.incomplete,
        "step_interval_pct": report.interval_pct(),
        "noise": asdict(report.noise) | {"method": report.noise.describe()} if report.noise else None,
        "changed": [change_dict(g, report) for g in report.changed], "new": report.new, "vanished": report.vanished,
        "fail_on_regression": fail_on_regression,
        "regressions": report.regressions(fail_on_regression) if fail_on_regression is not None else [],
        "within_noise": report.within_noise(fail_on_regression) if fail_on_regression is not None else [],
    })


def render_diff_json(report: DiffReport, pct: float | None = None) -> str:
    """`diff --format json`: diff_dict as text."""
    return json.dumps(diff_dict(report, pct), indent=1) + "\n"


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f} ms"


def _pct(value: float) -> str:
    return f"{value:+.1f}%" if math.isfinite(value) else "new"


def _noise(report: DiffReport) -> str:
    """'; step -0.3% (95% interval -3.0% to +4.1%) from 5 and 5 un-profiled steps', or why there is none."""
    noise = report.noise
    if noise is None:
        return "; no interval (fewer than 2 iteration times in a profile)"
    low, high = noise.interval_pct()
    return (f"; step {noise.change_pct:+.1f}% (95% interval {low:+.1f}% to {high:+.1f}%) from {noise.base_n} and "
            f"{noise.new_n} {noise.source}" + ("" if noise.significant() else ": within the noise"))


def _headline(report: DiffReport, pct: float | None) -> str:
    headline = (f"{report.measure} per iteration: {_ms(report.base_total_s)} -> {_ms(report.new_total_s)} "
                f"({_pct(report.total_delta_pct)}{_noise(report)}); {len(report.changed)} matched, "
                f"{len(report.new)} new, {len(report.vanished)} vanished group(s)")
    if pct is not None:
        regressions = report.regressions(pct)
        headline += f"; regression > {pct:g}% outside the noise: " + ("; ".join(regressions) if regressions else "none")
        quiet = report.within_noise(pct)
        if quiet:
            headline += f"; more than {pct:g}% but within the noise (not failed): " + "; ".join(quiet)
    if report.incomplete:
        headline = f"INCOMPLETE PROFILE ({'; '.join(report.incomplete)}): no gate passes on it. " + headline
    return headline + "."


def _label_cell(g: GroupChange, chars: int) -> Text:
    """The group on up to three lines (op; module, cut from the left to `chars`; shapes without
    the spaces after their commas), so a narrow column wraps between shapes and keeps a module's end."""
    if not g.name:
        return rich_text(g.label)
    lines = [g.name]
    if g.module:
        room = max(chars - 2, 6)
        lines.append("@ " + (g.module if len(g.module) <= room else "…" + g.module[len(g.module) - room + 1:]))
    if g.shapes:
        lines.append(re.sub(r"(?<=,) +(?=[^\[\]]*\])", "", g.shapes))
    return Text("\n").join(rich_text(line) for line in lines)  # each part escaped, the breaks ours


NARROW = 100  # below this many columns the table leaves out `match` and fits the group to what is left


def diff_renderable(report: DiffReport, pct: float | None = None, top: int = 20, width: int | None = None) -> RenderableType:
    """A rich table of the largest changes, then new and vanished groups and the verdict; fitted
    to `width` columns (None: as wide as the names)."""
    narrow = width is not None and width < NARROW
    label_chars = max(12, width - 61) if narrow and width is not None else 40
    table = Table(title="rooflinectl diff", title_justify="left")
    names = ("group", "base", "new", "change", "roofline move") + (() if narrow else ("match",))
    for name in names:
        table.add_column(name, justify="right" if name in ("base", "new", "change") else "left",
                         width=label_chars if name == "group" and width is not None else None)
    for g in report.changed if top == 0 else report.changed[:top]:
        style = "red" if g.delta_s > 0 else "green"
        cells = [_label_cell(g, label_chars), _ms(g.base_time_s), _ms(g.new_time_s), Text(_pct(g.delta_pct), style=style),
                 rich_text(movement(g))]
        table.add_row(*cells, *(() if narrow else (rich_text(g.match),)))
    if 0 < top < len(report.changed):  # nothing left out without saying so
        table.caption, table.caption_justify = _left_out(len(report.changed), top), "left"
    parts: list[RenderableType] = [table] if report.changed else [Text("No group matched between the two profiles.")]
    for title, rows in (("new", report.new), ("vanished", report.vanished)):
        for r in rows if top == 0 else rows[:top]:
            kernel = "" if r["kernel"] in r["label"] else f" ({shorten_kernel_name(r['kernel'], 40)})"
            parts.append(rich_text(f"{title}: {r['label']}{kernel} {_ms(r['time_s'])}"))
    parts += [rich_text(note, style="dim") for note in report.notes]
    parts.append(rich_text(_headline(report, pct), style="bold"))
    return Group(*parts)


def render_diff_markdown(report: DiffReport, pct: float | None = None, top: int = 20) -> str:
    lines = ["## rooflinectl diff", "", markdown(_headline(report, pct)), "",
             "| group | base | new | change | roofline move | match |", "|---|---:|---:|---:|---|---|"]
    for g in report.changed if top == 0 else report.changed[:top]:
        lines.append(f"| {markdown(g.label)} | {_ms(g.base_time_s)} | {_ms(g.new_time_s)} | "
                     f"{_pct(g.delta_pct)} | {markdown(movement(g))} | {markdown(g.match)} |")
    for title, rows in (("New", report.new), ("Vanished", report.vanished)):
        if rows:
            lines += ["", f"**{title}:** " + "; ".join(f"{markdown(r['label'])} {_ms(r['time_s'])}" for r in (rows if top == 0 else rows[:top]))]
    if 0 < top < len(report.changed):
        lines += ["", f"_{_left_out(len(report.changed), top, cli=False)}_"]
    lines += [f"_{markdown(note)}_" for note in report.notes]
    return "\n".join(lines) + "\n"


def _left_out(matched: int, top: int, cli: bool = True) -> str:
    """The count of groups a report leaves out; the option that shows them in the terminal only
    (a pull-request comment names no options)."""
    return (f"{top} of {matched} matched groups shown, largest changes first"
            + (" (--all shows every one)" if cli else ""))


def render_diff_github(report: DiffReport, pct: float | None = None, top: int = 20) -> str:
    """GitHub workflow commands: ::error per regression (and for an incomplete profile), then the headline."""
    lines = [f"::error title=rooflinectl diff%3A incomplete profile::{github_data(reason)}" for reason in report.incomplete]
    if pct is not None:
        lines += [f"::error title=rooflinectl diff%3A regression::{github_data(sentence)}"
                  for sentence in report.regressions(pct)]
    lines.append(plain(_headline(report, pct)))
    return "\n".join(lines) + "\n"


def render_diff_junit(report: DiffReport, pct: float | None = None, top: int = 20) -> str:
    """One test case for the total and one per matched group (largest changes first, `top` of
    them): failed when it regressed more than pct percent (none fail without --fail-on-regression)."""
    suite = JUnitSuite("rooflinectl.diff")

    def case(name: str, failed: bool, message: str) -> None:
        if failed:
            suite.case(name, failure=("regression", message))
        else:
            suite.case(name, output=plain(message))

    if report.incomplete:
        case("profiles.complete", pct is not None, "incomplete profile: " + "; ".join(report.incomplete))
    case(f"total {report.measure}", pct is not None and report.total_regressed(pct),
         f"{_ms(report.base_total_s)} -> {_ms(report.new_total_s)} ({_pct(report.total_delta_pct)}{_noise(report)})")
    for n, g in enumerate(report.changed):
        failed = pct is not None and report.group_regressed(g, pct)
        if failed or top == 0 or n < top:  # a regression past `top` is a failure too: failures match the exit code
            case(g.label, failed, f"{_ms(g.base_time_s)} -> {_ms(g.new_time_s)} ({_pct(g.delta_pct)}); {movement(g)}")
    return suite.xml()
