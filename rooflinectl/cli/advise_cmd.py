"""`rooflinectl advise`: ranked findings with their fix and saving; a non-zero exit fails CI.

Exit codes: 0 no finding at or above --fail-on (or no --fail-on and no threshold); 1 findings at
or above it; 2 usage or input error (bad option, unreadable or invalid profile, bad
[tool.rooflinectl]); 3 --verify without a GPU, or on another GPU than the profile's; 5 a gate
asked of an incomplete profile (failed run, no kernels).
Setting a threshold (--min-efficiency, --max-unknown-share, --max-launch-overhead) without
--fail-on fails on its gate's error.
"""

from __future__ import annotations

import os
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import click

from rooflinectl.analysis.advice import RULES, SEVERITIES, Thresholds, advise, exit_code
from rooflinectl.cli.common import emit, format_option, terminal_width
from rooflinectl.cli.config import load_config
from rooflinectl.cli.profiles import load_arguments_paths
from rooflinectl.cli.rule_docs import explain_text, rules_help
from rooflinectl.cli.values import FiniteFloatRange
from rooflinectl.errors import EXIT_INCOMPLETE, RooflineError, UsageError
from rooflinectl.outputs.advice_render import report_link_markdown
from rooflinectl.outputs.formats import chosen_format, render

_GATES = ("min_efficiency", "max_unknown_share", "max_launch_overhead")


def repository_root(start: Path) -> str:
    """The folder GitHub names a pull request's files from: $GITHUB_WORKSPACE in a workflow (the
    checkout), else the git repository around `start` (the folder holding .git), else `start`."""
    workspace = os.environ.get("GITHUB_WORKSPACE")
    if workspace and (start == Path(workspace) or Path(workspace) in start.parents):
        return workspace
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return str(folder)
    return str(start)


def _rule_patterns(values: list[str] | tuple[str, ...], option: str) -> tuple[str, ...]:
    """Rule ids or prefixes (`fusion`, `attention.materialised-scores`), comma lists allowed;
    one that names no rule is an error (a typo would silently run everything)."""
    patterns = tuple(p.strip() for v in values for p in str(v).split(",") if p.strip())
    unknown = [p for p in patterns if not any(r == p or r.startswith(p.rstrip(".") + ".") for r in RULES)]
    if unknown:
        raise UsageError(f"{option}: no rule is named {', '.join(unknown)} (`rooflinectl advise --list-rules`).")
    return patterns


def thresholds_from(values: dict[str, Any]) -> Thresholds:
    """Thresholds from merged settings (config, then flags)."""
    names = {f.name for f in fields(Thresholds)}
    kwargs = {k: v for k, v in values.items() if k in names}
    if "hide_below" in values:
        kwargs["hide_below_share"] = float(values["hide_below"])
    ignored = [*values.get("disable", ()), *values.get("ignore", ())]
    kwargs["disabled_rules"] = _rule_patterns(ignored, "--ignore")
    kwargs["selected_rules"] = _rule_patterns(values.get("select", ()), "--select")
    return Thresholds(**kwargs)


@click.command(name="advise")
@click.argument("profiles", nargs=-1)
@format_option("advice")
@click.option("--fail-on", type=click.Choice(SEVERITIES), default=None,
              help="Exit 1 when a finding is at or above this severity.")
@click.option("--min-efficiency", type=FiniteFloatRange(0, 1), default=None,
              help="Gate: time-weighted efficiency of known-cost kernels at least this.")
@click.option("--max-unknown-share", type=FiniteFloatRange(0, 1), default=None,
              help="Gate: share of kernel time without a cost model at most this.")
@click.option("--max-launch-overhead", type=FiniteFloatRange(0, 1), default=None,
              help="Gate: device idle time / window at most this.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="pyproject.toml to read [tool.rooflinectl] from (default: the nearest one above the cwd).")
@click.option("--select", multiple=True, metavar="RULES",
              help="Run only these rules (ids or prefixes such as `fusion`; repeat or comma-separate).")
@click.option("--ignore", multiple=True, metavar="RULES", help="Do not run these rules (ids or prefixes).")
@click.option("--hide-below", type=FiniteFloatRange(0, 1), default=None, metavar="SHARE",
              help="Leave out fixes saving less than this share of the run [default: 0.001; 0 shows all].")
@click.option("-o", "--output", default=None, metavar="FILE",
              help="Write the report to FILE instead of stdout ('-': stdout).")
@click.option("--force", is_flag=True, help="replace an -o file that is an input, or not a report rooflinectl wrote")
@click.option("--top", type=click.IntRange(min=0), default=None, metavar="N",
              help="Show at most N findings (0: all) [default: 10, at most 5 per rule; --all: every one].")
@click.option("--all", "show_all", is_flag=True,
              help="Show every finding: no limit of 10 in all or 5 per rule, and the small ones too.")
@click.option("--report-link", default=None, metavar="PATH_OR_URL",
              help="With --format markdown: end with a link to the HTML report (`rooflinectl report`), e.g. the CI artifact.")
@click.option("--list-rules", is_flag=True, help="Print every rule, its estimate and exit.")
@click.option("--explain", metavar="RULE_ID", default=None,
              help="Print a rule's documentation (its section of docs/advice.md, as this version has it) and exit.")
@click.option("--verify", is_flag=True,
              help="GPU only: rebuild each mechanical fix's op with the profiled shapes, time it as profiled and "
                   "fixed on this GPU (a few seconds), show the measured saving and rank by it.")
@click.pass_context
def command(ctx: click.Context, profiles: tuple[str, ...], fmt: str | None, fail_on: str | None,
            min_efficiency: float | None, max_unknown_share: float | None, max_launch_overhead: float | None,
            config_path: Path | None, select: tuple[str, ...], ignore: tuple[str, ...], hide_below: float | None,
            output: str | None, force: bool, top: int | None, show_all: bool, list_rules: bool, explain: str | None,
            verify: bool, report_link: str | None) -> None:
    """Recommend fixes: each finding with evidence and the time it saves.

    PROFILE defaults to rooflinectl.profile.json (else this folder's rank profiles); the rank
    profiles of one job (a folder, a glob, a list) are advised together, with the rules about
    communication and stragglers.

    Exit codes: 0 nothing at or above --fail-on; 1 findings at or above it; 2 usage or input error
    (--verify of a profile recorded on a CPU: there are no GPU ops to rebuild);
    3 --verify on a machine without a GPU, or on another GPU than the profile's; 5 a gate on an
    incomplete profile (its run failed, or it recorded no kernels).
    """
    if list_rules:
        click.echo(rules_help(min(terminal_width(), 100)))
        return
    try:
        if explain is not None:
            click.echo(explain_text(explain, min(terminal_width(), 100)), nl=False)
            return
        fmt = chosen_format("advice", fmt, output)
        if report_link is not None and fmt != "markdown":
            raise UsageError("--report-link goes with --format markdown (a step summary or PR comment).")
        flags = {"min_efficiency": min_efficiency, "max_unknown_share": max_unknown_share,
                 "max_launch_overhead": max_launch_overhead, "fail_on": fail_on, "hide_below": hide_below,
                 "select": select or None}
        settings, level = _settings(config_path, flags, ignore, show_all or top == 0, top)
        data, notes, paths = load_arguments_paths(profiles)
        for note in notes:
            click.echo(f"rooflinectl: {note}", err=True)
        label = " ".join(profiles) or " ".join(str(p) for p in paths)
        report = advise(data, thresholds_from(settings), profile_path=label)
        report = replace(report, paths_from=repository_root(Path.cwd()))  # where annotations name files from
        if verify:
            from rooflinectl.verify import verify_report  # imports torch: only when asked

            report = verify_report(report, data)
    except RooflineError as exc:
        click.echo(f"rooflinectl: {exc}", err=True)
        ctx.exit(exc.exit_code)
        return
    width = terminal_width()
    rendered = render("advice", fmt, report=report, fail_on=level, width=width)
    if report_link:
        rendered += "\n" + report_link_markdown(report_link)
    emit(rendered, output, width, inputs=paths, force=force)
    code = exit_code(report, level)
    if code == EXIT_INCOMPLETE:
        click.echo(f"rooflinectl: {report.profile_path} is an incomplete profile ({report.incomplete}): the gate fails.",
                   err=True)
    ctx.exit(code)


def _settings(config_path: Path | None, flags: dict[str, Any], ignore: tuple[str, ...], every: bool,
              top: int | None) -> tuple[dict[str, Any], str | None]:
    """The merged settings ([tool.rooflinectl], then the flags) and the severity that fails:
    --fail-on, else `error` when a gate's threshold is set (a request to fail when it is crossed)."""
    config = load_config(config_path)
    if config.message:
        click.echo(f"rooflinectl: {config.message}", err=True)
    settings = dict(config.values)
    settings.update({k: v for k, v in flags.items() if v is not None})
    if every:  # --all, --top 0: every limit lifted; an explicit --hide-below still holds
        settings.update({"max_findings": 0, "max_findings_per_rule": 0,
                         "hide_below": 0.0 if flags["hide_below"] is None else flags["hide_below"]})
    elif top is not None:
        settings["max_findings"] = top
    if ignore:
        settings["ignore"] = (*settings.get("ignore", ()), *ignore)
    level = settings.get("fail_on")
    if level is None and any(settings.get(k) is not None for k in _GATES):
        level = "error"
    return settings, level
