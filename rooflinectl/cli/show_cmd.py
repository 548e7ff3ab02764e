"""`rooflinectl show [PROFILE]`: the kernel table again, by kernel, op or module."""

from __future__ import annotations

import click

from rooflinectl.analysis.regroup import regroup
from rooflinectl.cli.common import console, load_or_default
from rooflinectl.outputs.table import render_profile, table_csv, table_json


@click.command("show")
@click.argument("profile", required=False)
@click.option("--by", type=click.Choice(["kernel", "op", "module"]), default="kernel", show_default=True)
@click.option("--top", type=click.IntRange(min=1), default=15, show_default=True, help="rows in the table")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True)
def command(profile: str | None, by: str, top: int, fmt: str) -> None:
    """Print the kernel table of PROFILE (default: rooflinectl.profile.json here)."""
    data = load_or_default(profile)
    table = regroup(data.kernels, by, data.ceilings)
    if fmt == "csv":
        click.echo(table_csv(table), nl=False)
    elif fmt == "json":
        click.echo(table_json(table, data))
    else:
        console().print(render_profile(data, table, top=top))
