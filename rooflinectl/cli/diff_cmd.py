"""`rooflinectl diff BASE NEW`: what got faster or slower, and did it move on the roofline.

Exit codes: 0 no regression (or no --fail-on-regression); 1 a regression above PCT; 2 usage or
input error (unreadable or invalid profile); 5 --fail-on-regression on an incomplete profile.
A regression: the total (window, else kernel time, per iteration) grew more than PCT percent, or
a matched group grew more than PCT percent and by at least 1% of the base kernel time (smaller
changes are noise).
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from rooflinectl.analysis.diff import diff_profiles
from rooflinectl.cli.common import console
from rooflinectl.cli.config import load_config
from rooflinectl.errors import EXIT_FINDINGS, EXIT_INCOMPLETE, EXIT_OK, RooflineError
from rooflinectl.outputs.diff import diff_dict, diff_renderable, render_diff_markdown
from rooflinectl.outputs.profile_file import load_profile


@click.command(name="diff")
@click.argument("base", type=click.Path(dir_okay=False))
@click.argument("new", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(("rich", "markdown", "json")), default="rich", show_default=True)
@click.option("--fail-on-regression", "pct", type=click.FloatRange(min=0), default=None, metavar="PCT",
              help="Exit 1 when the total, or a group, got more than PCT percent slower.")
@click.option("--top", type=click.IntRange(min=1), default=20, show_default=True, help="Groups to show.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="pyproject.toml with [tool.rooflinectl] fail_on_regression (default: nearest above cwd).")
@click.pass_context
def command(ctx: click.Context, base: str, new: str, fmt: str, pct: float | None, top: int,
            config_path: Path | None) -> None:
    """Per kernel group: the change in time and the move on the roofline; new and vanished kernels.

    Exit codes: 0 no regression above PCT; 1 regression; 2 usage or input error; 5 a gate on an
    incomplete profile (its run failed, or it recorded no kernels).
    """
    try:
        if pct is None:
            config = load_config(config_path, section="diff")
            if config.message:
                click.echo(f"rooflinectl: {config.message}", err=True)
            pct = config.values.get("fail_on_regression")
        report = diff_profiles(load_profile(base), load_profile(new))
    except RooflineError as exc:
        click.echo(f"rooflinectl: {exc}", err=True)
        ctx.exit(exc.exit_code)
        return
    if fmt == "json":
        click.echo(json.dumps(diff_dict(report, pct), indent=1))
    elif fmt == "markdown":
        click.echo(render_diff_markdown(report, pct, top), nl=False)
    else:
        console().print(diff_renderable(report, pct, top))
    if pct is not None and report.incomplete:
        click.echo(f"rooflinectl: an incomplete profile fails the gate ({'; '.join(report.incomplete)}).", err=True)
        ctx.exit(EXIT_INCOMPLETE)
    ctx.exit(EXIT_FINDINGS if pct is not None and report.regressions(pct) else EXIT_OK)
