"""`rooflinectl diff BASE NEW`: what got faster or slower, and did it move on the roofline.

Exit codes: 0 no regression (or no --fail-on-regression); 1 a regression above PCT; 2 usage or
input error (unreadable or invalid profile); 5 --fail-on-regression on an incomplete profile.
A regression: the total (window, else kernel time, per iteration; kernel time too when a profile's
window was measured on the host, before 2026-11-29) grew more than PCT percent, or
a matched group grew more than PCT percent and by at least 1% of the base kernel time (smaller
changes are noise), and in both cases the change is outside its 95% interval from the profiles'
per-iteration times (analysis/noise.py; a change above PCT inside it is said, not failed).
"""

from __future__ import annotations

from pathlib import Path

import click

from rooflinectl.analysis.diff import diff_profiles
from rooflinectl.cli.common import emit, format_option, terminal_width, top_options
from rooflinectl.cli.config import load_config
from rooflinectl.cli.profiles import expand, load_arguments
from rooflinectl.cli.values import FiniteFloatRange
from rooflinectl.errors import EXIT_FINDINGS, EXIT_INCOMPLETE, EXIT_OK, RooflineError, UsageError
from rooflinectl.outputs.formats import chosen_format, render
from rooflinectl.outputs.profile_previous import PREVIOUS_PROFILE_PATH
from rooflinectl.schema import DEFAULT_PROFILE_PATH


@click.command(name="diff")
@click.argument("base", required=False)
@click.argument("new", required=False)
@format_option("diff")
@click.option("--fail-on-regression", "pct", type=FiniteFloatRange(min=0), default=None, metavar="PCT",
              help="Exit 1 when the total, or a group, got more than PCT percent slower, outside the noise "
                   "(the 95% interval from both profiles' iteration times).")
@top_options(20, "groups shown")
@click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="pyproject.toml with [tool.rooflinectl] fail_on_regression (default: nearest above cwd).")
@click.option("-o", "--output", default=None, metavar="FILE",
              help="Write the report to FILE instead of stdout ('-': stdout).")
@click.option("--force", is_flag=True, help="replace an -o file that is an input, or not a report rooflinectl wrote")
@click.pass_context
def command(ctx: click.Context, base: str | None, new: str | None, fmt: str | None, pct: float | None, top: int,
            config_path: Path | None, output: str | None, force: bool) -> None:
    """Compare two profiles: per group, time change and roofline move.

    BASE and NEW are profile files, or each the rank profiles of one job (a folder or a quoted
    glob): their kernel tables averaged over the ranks are compared. NEW defaults to
    rooflinectl.profile.json, BASE to rooflinectl.profile.prev.json (the profile it replaced).

    Each change comes with a 95% interval from the iteration times both profiles hold; a change
    inside it is the runs' own variation, not a regression. Groups found on one side only are
    listed as new or vanished.

    Exit codes: 0 no regression above PCT; 1 regression; 2 usage or input error; 5 a gate on an
    incomplete profile (its run failed, or it recorded no kernels).
    """
    try:
        fmt = chosen_format("diff", fmt, output)
        base, new = _default_pair(base, new)
        if pct is None:
            config = load_config(config_path, section="diff")
            if config.message:
                click.echo(f"rooflinectl: {config.message}", err=True)
            pct = config.values.get("fail_on_regression")
        inputs = [*expand([base]), *expand([new])]
        (base_data, base_notes), (new_data, new_notes) = load_arguments([base]), load_arguments([new])
        for note in base_notes + new_notes:
            click.echo(f"rooflinectl: {note}", err=True)
        report = diff_profiles(base_data, new_data)
    except RooflineError as exc:
        click.echo(f"rooflinectl: {exc}", err=True)
        ctx.exit(exc.exit_code)
        return
    width = terminal_width()
    emit(render("diff", fmt, report=report, pct=pct, top=top, width=width), output, width, inputs=inputs, force=force)
    if pct is not None and report.incomplete:
        click.echo(f"rooflinectl: an incomplete profile fails the gate ({'; '.join(report.incomplete)}).", err=True)
        ctx.exit(EXIT_INCOMPLETE)
    ctx.exit(EXIT_FINDINGS if pct is not None and report.regressions(pct) else EXIT_OK)


def _default_pair(base: str | None, new: str | None) -> tuple[str, str]:
    """No NEW: the default profile; no BASE: the one it replaced (outputs/profile_previous.py)."""
    new = new or DEFAULT_PROFILE_PATH
    if base is None:
        if not Path(PREVIOUS_PROFILE_PATH).is_file():
            raise UsageError(f"diff compares two profiles: give BASE and NEW (with none, it compares "
                             f"{PREVIOUS_PROFILE_PATH}, which `profile` keeps when it replaces {DEFAULT_PROFILE_PATH}, "
                             "and there is none here).")
        base = PREVIOUS_PROFILE_PATH
    return base, new
