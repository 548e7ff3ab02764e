"""Rendering an AdviceReport: rich (terminal), markdown, json, github annotations, junit XML.

Renderers return strings or rich renderables; they never print.
"""

from __future__ import annotations

import json
import os
import urllib.parse
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from rooflinectl.analysis.advice.engine import AdviceReport, exit_code
from rooflinectl.analysis.advice.registry import Finding, severity_rank
from rooflinectl.outputs.escape import github_data, github_property, markdown, plain, rich_text
from rooflinectl.outputs.formats import names
from rooflinectl.outputs.junit import JUnitSuite
from rooflinectl.outputs.plain_text import plain_text
from rooflinectl.outputs.plot_names import shorten_kernel_name
from rooflinectl.outputs.source_text import location_text, split_location
from rooflinectl.outputs.table import fit_columns
from rooflinectl.units import seconds

FORMATS: tuple[str, ...] = names("advice")  # the registry's (outputs/formats.py)
_STYLE = {"info": "cyan", "warning": "yellow", "error": "bold red"}
_GITHUB_LEVEL = {"info": "notice", "warning": "warning", "error": "error"}


def explain_command(rule_id: str) -> str:
    """How to read a rule's documentation offline, as the installed version has it (the terminal
    and the annotations say it; markdown for a PR comment links the docs instead)."""
    return f"rooflinectl advise --explain {rule_id}"


def _share(report: AdviceReport, seconds: float) -> str:
    return f"{seconds / report.run_time_s * 100:.1f}%" if report.run_time_s > 0 else "-"


def _headline(report: AdviceReport, fail_on: str | None, cli: bool = True) -> str:
    """The one-line summary. cli=False (markdown for a PR comment or step summary): the verdict in
    the reader's terms, with no exit codes or options of the command that wrote it."""
    code = exit_code(report, fail_on)
    if cli:
        verdict = f" fail on {fail_on}: exit {code}" if fail_on else " no --fail-on: exit 0"
    else:
        verdict = f" check at {fail_on}: {'failed' if code else 'passed'}" if fail_on else ""
    measured = [f for f in report.findings if f.verification is not None and f.verification.status != "not-run"]
    gained_s = sum(f.measured_saving_s or 0.0 for f in measured if f.verification and f.verification.status == "gain")
    verified = (f" --verify measured {len(measured)} fix(es) on this GPU: {seconds(gained_s, decimals=2)} saved "
                "(findings ranked by it);" if measured else "")
    warning = (f"INCOMPLETE PROFILE: {report.incomplete}; no gate passes on it. " if report.incomplete else "")
    return (f"{warning}{_counts(report, cli)} on {plain(report.device_name)}; estimated saving "
            f"{seconds(report.total_saving_s, decimals=2)} of {seconds(report.run_time_s, decimals=2)} "
            f"({_share(report, report.total_saving_s)}, Amdahl-capped{_over(report)})"
            + (";" if verified or verdict else "")
            + f"{verified}{verdict}.")


def _over(report: AdviceReport) -> str:
    """Advice times are totals: over how many profiled iterations, when there are several."""
    return f", totals over {report.iterations:g} profiled iterations" if report.iterations > 1 else ""


def _counts(report: AdviceReport, cli: bool = True) -> str:
    """'14 finding(s) (38 instances), 10 shown': the true counts, before any was left out."""
    total = len(report.findings) + len(report.left_out)
    instances = f" ({report.instances} instances)" if report.instances != total else ""
    shown = f", {len(report.findings)} shown" + (" (--all shows every one)" if cli else "") if report.left_out else ""
    return f"{total} finding(s){instances}{shown}"


def short_subject(subject: str, limit: int) -> str:
    """A subject of at most about `limit` characters: 'ops in a.long.module.path' keeps its ops
    and the end of the path ('mul+tanh in …h.{0-11}.mlp.act'); a kernel name is shortened."""
    if len(subject) <= limit:
        return subject
    head, sep, path = subject.rpartition(" in ")
    room = limit - len(head) - len(sep) - 1
    if sep and room >= 6:
        parts = path.split(".")
        tail = parts[-1]
        for part in reversed(parts[:-1]):
            if len(part) + 1 + len(tail) > room:
                break
            tail = f"{part}.{tail}"
        return f"{head}{sep}…{tail}"
    return shorten_kernel_name(subject, limit)


def _what(f: Finding, width: int | None = None, titled: bool = True) -> str:
    """Title, subject (a module pattern for a merged finding) and how many it stands for; without
    the title (a narrow table: the rule id beside it and the details below say it) when not titled."""
    if not titled:
        prefix = f"{f.count}x " if f.count > 1 else ""
        return prefix + (short_subject(f.subject, (width or 80) - len(prefix)) if f.subject else f.title)
    subject = short_subject(f.subject, width) if width else f.subject
    text = f"{f.title}: {subject}" if f.subject else f.title
    return f"{text} ({f.count}x)" if f.count > 1 else text


def _instances_line(f: Finding) -> str:
    """Where the merged finding's instances are, and what they add up to ('' for one)."""
    if f.count <= 1:
        return ""
    first = f.instances[0].subject if f.instances else f.subject
    return (f"{f.count} instances of one pattern ({f.subject}), {seconds(f.est_saving_s, decimals=2)} "
            f"estimated together; the evidence is the first's ({first}).")


def _omitted_note(report: AdviceReport, cli: bool = True) -> str:
    """What the limits left out; cli=False (markdown for a PR comment): no option to type."""
    if not report.omitted:
        return ""
    rules = ", ".join(f"{count} {rule_id}" for rule_id, count in sorted(report.omitted.items()))
    return f"{sum(report.omitted.values())} more finding(s) not shown ({rules})" + (": --all shows them." if cli else ".")


def _verified(report: AdviceReport) -> bool:
    return any(f.verification is not None for f in report.findings)


def _estimate(f: Finding) -> str:
    """The rule's estimate (the `est. saving` column; --verify's figure has its own)."""
    return seconds(f.est_saving_s, decimals=2)


def measured_text(f: Finding) -> str:
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


def _quiet_note(report: AdviceReport, cli: bool = True) -> str:
    """What was left out for being small, and how to see it ('' when nothing was; cli=False: no option)."""
    if not report.hidden:
        return ""
    return (f"{report.hidden} finding(s) saving less than {report.hide_below_share:.1%} of the run left out"
            + (" (--hide-below 0 shows them)." if cli else "."))


def _nothing_found(report: AdviceReport) -> str:
    return (f"No findings: no rule found a fix worth {report.hide_below_share:.1%} of the run "
            f"({len(report.rules)} rules ran).")


_MIN_TEXT_WIDTH = (30, 36)  # rule (whole rule ids), finding: what they keep before a short column gives way
_DROP_ORDER = ("severity", "measured")  # the detail below repeats both


def _detail(label: str, text: str) -> Table:
    """A `   evidence: ...` line whose continuation lines stay under the text, not at column 0."""
    grid = Table.grid(padding=(0, 1, 0, 0))
    grid.add_column(no_wrap=True, width=len(label) + 3, justify="right", style="dim")
    grid.add_column(ratio=1)
    grid.add_row(label, Text(text))  # Text: the evidence is data, never markup
    return grid


_TITLED_FROM = 120  # columns from which the table's finding column also carries the rule's title


def _table_rows(report: AdviceReport, verified: bool, width: int | None) -> list[dict[str, Any]]:
    titled = width is None or width >= _TITLED_FROM
    return [{"#": str(n), "severity": Text(f.severity, style=_STYLE[f.severity]), "rule": f.rule_id,
             "finding": _what(f, 48 if titled else 36, titled), "est. saving": _estimate(f),
             "measured": measured_text(f) if verified else "", "share": _share(report, f.ranked_saving_s)}
            for n, f in enumerate(report.actions, 1)]


def _actions_table(report: AdviceReport, width: int | None) -> Table:
    """The ranked actions, fitted to `width` (outputs/table.fit_columns, as `show` fits its table)."""
    verified = _verified(report)
    rows = _table_rows(report, verified, width)
    short = ("#", "severity", "est. saving", *(("measured",) if verified else ()), "share")
    widths = {c: max([len(c)] + [r[c].cell_len if isinstance(r[c], Text) else len(r[c]) for r in rows]) for c in short}
    natural = (max([4] + [len(r["rule"]) for r in rows]), max([7] + [len(r["finding"]) for r in rows]))
    least = (natural[0], _MIN_TEXT_WIDTH[1])  # rule ids stay whole (--select takes them): the finding gives way
    shown, (rule_width, finding_width) = fit_columns(widths, natural, width, short, _DROP_ORDER, least)
    table = Table(title="rooflinectl advice: actions, largest saving first", title_justify="left",
                  show_lines=False, box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1, 0, 0))
    order = [c for c in ("#", "severity") if c in shown] + ["rule", "finding"] + [c for c in shown if c not in ("#", "severity")]
    for name in order:
        limit = {"rule": rule_width, "finding": finding_width}.get(name)
        table.add_column(name, justify="right" if name in ("#", "est. saving", "measured", "share") else "left",
                         no_wrap=limit is None, overflow="fold", max_width=limit)
    for row in rows:
        table.add_row(*[rich_text(row[c]) if c in ("rule", "finding") else row[c] for c in order])
    return table


def _details(n: int, f: Finding) -> list[RenderableType]:
    head = Text()
    head.append(f"{n}. {plain(f.title)}", style="bold")
    head.append(f"  [{f.rule_id}, {f.severity}]", style="dim")
    parts: list[RenderableType] = [head]
    if f.source:
        parts.append(_detail("source:", plain(location_text(f))))
    if f.count > 1:
        parts.append(_detail("where:", plain(_instances_line(f))))
    parts += [_detail("evidence:", plain(f.evidence)), _detail("fix:", plain(f.recommendation))]
    if f.verification is not None:  # the table's measured column, when there was no room for it
        parts.append(_detail("verified:", plain(_verification_line(f))))
    parts.append(_detail("docs:", explain_command(f.rule_id)))
    return parts


def _notes_grid(notes: list[Finding], first: int) -> Table:
    """One line per note (number, severity, rule: what), wrapped lines kept under their text."""
    grid = Table.grid(padding=(0, 1, 0, 0))
    grid.add_column(justify="right", no_wrap=True)
    grid.add_column(no_wrap=True)
    grid.add_column(ratio=1)
    for n, f in enumerate(notes, first):
        grid.add_row(str(n), Text(f.severity, style=_STYLE[f.severity]),
                     Text(f"{f.rule_id}: {plain(_what(f, 60))}"))
    return grid


def rich_renderable(report: AdviceReport, fail_on: str | None = None, width: int | None = None) -> RenderableType:
    """The ranked actions as a table (est. saving, and after --verify the measured one), then the
    notes that save nothing (one line each), then each finding's evidence and fix; fitted to
    `width` characters (None: natural widths)."""
    actions, notes = report.actions, report.notes
    parts: list[RenderableType] = []
    if actions:
        parts.append(_actions_table(report, width))
    elif not notes:
        parts.append(Text(_nothing_found(report)))
    if notes:
        parts += [Text("Notes (no saving):", style="bold"), _notes_grid(notes, len(actions) + 1)]
    for n, f in enumerate([*actions, *notes], 1):
        parts += _details(n, f)
    for text in (_omitted_note(report), _quiet_note(report)):
        if text:
            parts.append(Text(text, style="dim"))
    parts.append(Text(_headline(report, fail_on), style="bold"))
    return Group(*parts)


def render_markdown(report: AdviceReport, fail_on: str | None = None) -> str:
    lines = [f"## rooflinectl advice: {markdown(report.device_name)}", "", markdown(_headline(report, fail_on, cli=False)),
             ""]
    actions, notes = report.actions, report.notes
    if actions:
        verified = _verified(report)
        extra, align = (" measured |", "---:|") if verified else ("", "")
        lines += [f"| # | severity | rule | finding | est. saving |{extra} share |", f"|---:|---|---|---|---:|{align}---:|"]
        for n, f in enumerate(actions, 1):
            measured = f" {measured_text(f)} |" if verified else ""
            lines.append(f"| {n} | {f.severity} | `{f.rule_id}` | {markdown(_what(f))} | "
                         f"{_estimate(f)} |{measured} {_share(report, f.ranked_saving_s)} |")
        lines.append("")
    if notes:
        lines += ["**Notes (no saving):**", ""]
        lines += [f"- {n}. {f.severity} `{f.rule_id}`: {markdown(_what(f, 60))}"
                  for n, f in enumerate(notes, len(actions) + 1)]
        lines.append("")
    if not report.findings:
        lines.append(_nothing_found(report))
    for n, f in enumerate([*actions, *notes], 1):
        lines += [f"### {n}. {markdown(f.title)} (`{f.rule_id}`, {f.severity})", ""]
        if f.source:
            lines += [f"**Source:** {markdown(location_text(f))}", ""]
        if f.count > 1:
            lines += [f"**Where:** {markdown(_instances_line(f))}", ""]
        lines += [f"**Evidence:** {markdown(f.evidence)}", "", f"**Fix:** {markdown(f.recommendation)}", ""]
        if f.verification is not None:
            lines += [f"**Verified:** {markdown(_verification_line(f))}", ""]
        lines += [f"[About this rule]({f.docs})", ""]
    for text in (_omitted_note(report, cli=False), _quiet_note(report, cli=False)):
        if text:
            lines.append(f"_{markdown(text)}_")
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
        title = github_property(f"rooflinectl {f.rule_id}: {_what(f)}")
        verified = f" Verified: {_verification_line(f)}" if f.verification is not None else ""
        where = f"{_instances_line(f)} " if f.count > 1 else ""
        message = github_data(f"{where}{f.evidence} Fix: {f.recommendation} "
                              f"(est. saving {seconds(f.est_saving_s, decimals=2)}, {_share(report, f.est_saving_s)})"
                              + verified + f" Docs: {f.docs} (offline: {explain_command(f.rule_id)})")
        lines.append(f"::{_GITHUB_LEVEL[f.severity]} {github_file(f, report)}title={title}::{message}")
    if report.omitted:
        lines.append(_omitted_note(report))
    lines.append(_headline(report, fail_on))
    return "\n".join(lines) + "\n"


def github_file(f: Finding, report: AdviceReport) -> str:
    """`file=PATH,line=N,` of a finding's source line ('' without one), PATH relative to the
    repository's root (report.paths_from, else the working directory) so that the annotation
    lands on the pull request's diff; a file outside it keeps its absolute path."""
    path, line = split_location(f.source)
    if line is None:
        return ""
    full = path if os.path.isabs(path) or not report.source_root else os.path.join(report.source_root, path)
    if os.path.isabs(full):
        relative = os.path.relpath(full, report.paths_from or os.getcwd())
        path = full if relative.startswith("..") else relative
    return f"file={github_property(path.replace(os.sep, '/'))},line={line},"


def _junit_text(f: Finding) -> str:
    text = f"{_instances_line(f)} {f.evidence}" if f.count > 1 else f.evidence
    return f"{location_text(f)}: {text}" if f.source else text


def render_junit(report: AdviceReport, fail_on: str | None = None) -> str:
    """One test case per rule that ran: failed when it has findings at or above fail_on, skipped
    for gates without a threshold. Its failures agree with the exit code (engine.exit_code):
    none without fail_on (the findings go to system-out), and an incomplete profile fails only a gate."""
    level = severity_rank(fail_on) if fail_on else None
    suite = JUnitSuite("rooflinectl.advise")
    if report.incomplete:
        message = f"incomplete profile: {report.incomplete}"
        if fail_on:
            suite.case("profile.complete", failure=("incomplete", message))
        else:
            suite.case("profile.complete", output=plain(message + " (no gate asked)"))
    for entry in report.rules:
        found: list[Finding] = [f for f in [*report.findings, *report.left_out] if f.rule_id == entry.id]
        bad = [f for f in found if level is not None and severity_rank(f.severity) >= level]
        docs = f"About this rule: {entry.docs_url}"
        output = "\n".join([*(plain(_junit_text(f)) for f in found), docs]) if found and not bad else None
        if bad:
            instances = sum(f.count for f in bad)
            counted = f"{len(bad)} finding(s)" + (f" ({instances} instances)" if instances != len(bad) else "")
            suite.case(entry.id, failure=(bad[0].severity, f"{entry.title}: {counted}, est. saving "
                                                            f"{seconds(sum(f.est_saving_s for f in bad), decimals=2)}"),
                       failure_text="\n\n".join([*(f"{plain(_junit_text(f))}\nFix: {plain(f.recommendation)}"
                                                   for f in bad), docs]))
        elif entry.gate and not found and entry.id not in report.active_gates:
            suite.case(entry.id, skipped="threshold not set")
        else:
            suite.case(entry.id, output=output)
    return suite.xml()


def render_text(report: AdviceReport, fmt: str, fail_on: str | None = None, width: int = 100) -> str:
    """Any format of the registry (outputs/formats.py) as a string (the table without colour), for
    files and tests."""
    from rooflinectl.outputs.formats import render

    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")
    if fmt == "table":
        return plain_text(rich_renderable(report, fail_on, width), width)
    return render("advice", fmt, report=report, fail_on=fail_on, width=width)
