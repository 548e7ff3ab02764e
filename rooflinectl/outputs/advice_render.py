"""Rendering an AdviceReport: rich (terminal), markdown, json, github annotations, junit XML.

Renderers return strings or rich renderables; they never print.
"""

from __future__ import annotations

import json
import urllib.parse

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from rooflinectl.analysis.advice.engine import AdviceReport, exit_code
from rooflinectl.analysis.advice.registry import Finding, severity_rank
from rooflinectl.outputs.escape import github_data, github_property, markdown, plain, rich_text
from rooflinectl.outputs.junit import JUnitSuite
from rooflinectl.outputs.plain_text import plain_text
from rooflinectl.outputs.plot_names import shorten_kernel_name
from rooflinectl.outputs.table import fit_columns
from rooflinectl.units import seconds

FORMATS: tuple[str, ...] = ("table", "markdown", "json", "github", "junit")
_STYLE = {"info": "cyan", "warning": "yellow", "error": "bold red"}
_GITHUB_LEVEL = {"info": "notice", "warning": "warning", "error": "error"}


def _share(report: AdviceReport, seconds: float) -> str:
    return f"{seconds / report.run_time_s * 100:.1f}%" if report.run_time_s > 0 else "-"


def _headline(report: AdviceReport, fail_on: str | None) -> str:
    code = exit_code(report, fail_on)
    verdict = f"fail on {fail_on}: exit {code}" if fail_on else "no --fail-on: exit 0"
    measured = [f for f in report.findings if f.verification is not None and f.verification.status != "not-run"]
    gained_s = sum(f.measured_saving_s or 0.0 for f in measured if f.verification and f.verification.status == "gain")
    verified = (f" --verify measured {len(measured)} fix(es) on this GPU: {seconds(gained_s, decimals=2)} saved "
                "(findings ranked by it);" if measured else "")
    warning = (f"INCOMPLETE PROFILE: {report.incomplete}; no gate passes on it. " if report.incomplete else "")
    return (f"{warning}{len(report.findings)} finding(s) on {plain(report.device_name)}; estimated saving "
            f"{seconds(report.total_saving_s, decimals=2)} of {seconds(report.run_time_s, decimals=2)} "
            f"({_share(report, report.total_saving_s)}, Amdahl-capped);{verified} {verdict}.")


def _verified(report: AdviceReport) -> bool:
    return any(f.verification is not None for f in report.findings)


def _measured(f: Finding) -> str:
    """The saving --verify measured, or why there is none."""
    v = f.verification
    if v is None:
        return "-"
    if v.status == "not-run":
        return "not run"
    return seconds(v.measured_saving_s, decimals=2) + ("" if v.status == "gain" else " (no gain)")


_VERIFIED_AS = {"gain": "measured", "no-gain": "no gain", "not-run": "not run"}


def _verification_line(f: Finding) -> str:
    v = f.verification
    return "" if v is None else f"{_VERIFIED_AS[v.status]}: {v.detail}"


def _quiet_note(report: AdviceReport) -> str:
    """What was left out for being small, and how to see it ('' when nothing was)."""
    if not report.hidden:
        return ""
    return (f"{report.hidden} finding(s) saving less than {report.hide_below_share:.1%} of the run left out "
            "(--hide-below 0 shows them).")


def _nothing_found(report: AdviceReport) -> str:
    return (f"No findings: no rule found a fix worth {report.hide_below_share:.1%} of the run "
            f"({len(report.rules)} rules ran).")


_MIN_TEXT_WIDTH = (30, 24)  # rule (whole rule ids), finding: what they keep before a short column gives way
_DROP_ORDER = ("severity", "measured")  # the detail below repeats both


def _detail(label: str, text: str) -> Table:
    """A `   evidence: ...` line whose continuation lines stay under the text, not at column 0."""
    grid = Table.grid(padding=(0, 1, 0, 0))
    grid.add_column(no_wrap=True, width=len(label) + 3, justify="right", style="dim")
    grid.add_column(ratio=1)
    grid.add_row(label, Text(text))  # Text: the evidence is data, never markup
    return grid


def rich_renderable(report: AdviceReport, fail_on: str | None = None, width: int | None = None) -> RenderableType:
    """A table of the ranked findings followed by each finding's evidence and fix (and, after
    --verify, the saving measured on the GPU beside the estimate); fitted to `width` characters
    (outputs/table.fit_columns, as `show` fits its table; None: natural widths)."""
    verified = _verified(report)
    rows = []
    for n, f in enumerate(report.findings, 1):
        rows.append({"#": str(n), "severity": Text(f.severity, style=_STYLE[f.severity]), "rule": f.rule_id,
                     "finding": f"{f.title}: {shorten_kernel_name(f.subject, 48)}" if f.subject else f.title,
                     "est. saving": seconds(f.est_saving_s, decimals=2), "measured": _measured(f) if verified else "",
                     "share": _share(report, f.ranked_saving_s)})
    short = ("#", "severity", "est. saving", *(("measured",) if verified else ()), "share")
    widths = {c: max([len(c)] + [r[c].cell_len if isinstance(r[c], Text) else len(r[c]) for r in rows]) for c in short}
    natural = (max([4] + [len(r["rule"]) for r in rows]), max([7] + [len(r["finding"]) for r in rows]))
    least = (min(natural[0], _MIN_TEXT_WIDTH[0]), _MIN_TEXT_WIDTH[1])
    shown, (rule_width, finding_width) = fit_columns(widths, natural, width, short, _DROP_ORDER, least)
    table = Table(title="rooflinectl advice", title_justify="left", show_lines=False, box=box.SIMPLE_HEAD,
                  show_edge=False, pad_edge=False, padding=(0, 1, 0, 0))
    order = [c for c in ("#", "severity") if c in shown] + ["rule", "finding"] + [c for c in shown if c not in ("#", "severity")]
    for name in order:
        limit = {"rule": rule_width, "finding": finding_width}.get(name)
        table.add_column(name, justify="right" if name in ("#", "est. saving", "measured", "share") else "left",
                         no_wrap=limit is None, overflow="fold", max_width=limit)
    parts: list[RenderableType] = [table] if report.findings else [Text(_nothing_found(report))]
    for n, (f, row) in enumerate(zip(report.findings, rows), 1):
        table.add_row(*[rich_text(row[c]) if c in ("rule", "finding") else row[c] for c in order])
        head = Text()
        head.append(f"{n}. {plain(f.title)}", style="bold")
        head.append(f"  [{f.rule_id}, {f.severity}]", style="dim")
        parts += [head, _detail("evidence:", plain(f.evidence)), _detail("fix:", plain(f.recommendation))]
        if f.verification is not None:  # the table's measured column, when there was no room for it
            parts.append(_detail("verified:", plain(_verification_line(f))))
    for rule_id, count in sorted(report.omitted.items()):
        parts.append(Text(f"({count} more {rule_id} finding(s) not shown)", style="dim"))
    if report.hidden:
        parts.append(Text(_quiet_note(report), style="dim"))
    parts.append(Text(_headline(report, fail_on), style="bold"))
    return Group(*parts)


def render_markdown(report: AdviceReport, fail_on: str | None = None) -> str:
    lines = [f"## rooflinectl advice: {markdown(report.device_name)}", "", markdown(_headline(report, fail_on)), ""]
    if report.findings:
        verified = _verified(report)
        extra, align = (" measured |", "---:|") if verified else ("", "")
        lines += [f"| # | severity | rule | finding | est. saving |{extra} share |", f"|---:|---|---|---|---:|{align}---:|"]
        for n, f in enumerate(report.findings, 1):
            what = f"{f.title}: {f.subject}" if f.subject else f.title
            measured = f" {_measured(f)} |" if verified else ""
            lines.append(f"| {n} | {f.severity} | `{f.rule_id}` | {markdown(what)} | "
                         f"{seconds(f.est_saving_s, decimals=2)} |{measured} {_share(report, f.ranked_saving_s)} |")
        lines.append("")
        for n, f in enumerate(report.findings, 1):
            lines += [f"### {n}. {markdown(f.title)} (`{f.rule_id}`, {f.severity})", "",
                      f"**Evidence:** {markdown(f.evidence)}", "", f"**Fix:** {markdown(f.recommendation)}", ""]
            if f.verification is not None:
                lines += [f"**Verified:** {markdown(_verification_line(f))}", ""]
            lines += [f"[About this rule]({f.docs})", ""]
    else:
        lines.append(_nothing_found(report))
    for rule_id, count in sorted(report.omitted.items()):
        lines.append(f"_{count} more `{rule_id}` finding(s) not shown._")
    if report.hidden:
        lines.append(f"_{markdown(_quiet_note(report))}_")
    return "\n".join(lines).rstrip() + "\n"


def report_link_markdown(link: str) -> str:
    """The Markdown line saying where the HTML report is (`advise --format markdown --report-link`):
    a path or URL, such as a CI run's artifact; the link's text escaped, its target percent-encoded."""
    target = urllib.parse.quote(plain(link), safe=":/?#@!$&'*+,;=%~")
    return f"**Interactive report** (roofline, kernel table, advice; one HTML file): [{markdown(link)}]({target})\n"


def render_json(report: AdviceReport, fail_on: str | None = None) -> str:
    return json.dumps(report.to_dict(fail_on), indent=1, sort_keys=False) + "\n"


def render_github(report: AdviceReport, fail_on: str | None = None) -> str:
    """GitHub workflow commands: ::notice / ::warning / ::error, one per finding."""
    lines = []
    if report.incomplete:
        lines.append(f"::error title=rooflinectl: incomplete profile::{github_data(report.incomplete)}")
    for f in report.findings:
        title = github_property(f"rooflinectl {f.rule_id}: {f.title}")
        verified = f" Verified: {_verification_line(f)}" if f.verification is not None else ""
        message = github_data(f"{f.evidence} Fix: {f.recommendation} "
                              f"(est. saving {seconds(f.est_saving_s, decimals=2)}, {_share(report, f.est_saving_s)})"
                              + verified)
        lines.append(f"::{_GITHUB_LEVEL[f.severity]} title={title}::{message}")
    lines.append(_headline(report, fail_on))
    return "\n".join(lines) + "\n"


def render_junit(report: AdviceReport, fail_on: str | None = None) -> str:
    """One test case per rule that ran: failed when it has findings at or above fail_on
    (warning when no --fail-on is given), skipped for gates without a threshold."""
    level = severity_rank(fail_on or "warning")
    suite = JUnitSuite("rooflinectl.advise")
    if report.incomplete:
        suite.case("profile.complete", failure=("incomplete", f"incomplete profile: {report.incomplete}"))
    for entry in report.rules:
        found: list[Finding] = report.findings_of(entry.id)
        bad = [f for f in found if severity_rank(f.severity) >= level]
        output = "\n".join(plain(f.evidence) for f in found) if found and not bad else None
        if bad:
            suite.case(entry.id, failure=(bad[0].severity, f"{entry.title}: {len(bad)} finding(s), est. saving "
                                                            f"{seconds(sum(f.est_saving_s for f in bad), decimals=2)}"),
                       failure_text="\n\n".join(f"{plain(f.evidence)}\nFix: {plain(f.recommendation)}" for f in bad))
        elif entry.gate and not found and entry.id not in report.active_gates:
            suite.case(entry.id, skipped="threshold not set")
        else:
            suite.case(entry.id, output=output)
    return suite.xml()


def render_text(report: AdviceReport, fmt: str, fail_on: str | None = None, width: int = 100) -> str:
    """Any format as a string (rich without colour), for files and tests."""
    if fmt == "table":
        return plain_text(rich_renderable(report, fail_on, width), width)
    renderers = {"markdown": render_markdown, "json": render_json, "github": render_github, "junit": render_junit}
    if fmt not in renderers:
        raise ValueError(f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")
    return renderers[fmt](report, fail_on)
