"""`rooflinectl show [PROFILE]`: the kernel table again, by kernel, op or module."""

from __future__ import annotations

import click
import pandas as pd

from rooflinectl.analysis.regroup import regroup, unknown_costs
from rooflinectl.cli.common import console, load_or_default
from rooflinectl.outputs.table import render_profile, table_csv, table_json, unknown_table
from rooflinectl.profile_model import ProfileData


@click.command("show")
@click.argument("profile", required=False)
@click.option("--by", type=click.Choice(["kernel", "op", "module"]), default="kernel", show_default=True)
@click.option("--top", type=click.IntRange(min=1), default=15, show_default=True, help="rows in the table")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True)
@click.option("--unknown", is_flag=True, help="list the ops and kernels without a cost, their time and why")
@click.option("--include-setup", is_flag=True,
              help="also the work outside the steady state (weight upload, warm-up, compilation); "
                   "csv/json: as rows with phase=setup")
def command(profile: str | None, by: str, top: int, fmt: str, unknown: bool, include_setup: bool) -> None:
    """Print the kernel table of PROFILE (default: rooflinectl.profile.json here)."""
    data = load_or_default(profile)
    if unknown:
        rows = unknown_costs(data.kernels)
        if fmt == "csv":
            click.echo(table_csv(rows), nl=False)
        elif fmt == "json":
            click.echo(table_json(rows, data))
        else:
            console().print(unknown_table(rows, top=top))
        return
    table = regroup(data.kernels, by, data.ceilings)
    setup = data.setup_kernels if include_setup and data.setup_kernels is not None else None
    if setup is not None:
        setup = regroup(setup, by, data.ceilings)
        data = ProfileData(data.kernels, data.ceilings, data.metadata, data.summary, setup)
    if fmt in ("csv", "json"):
        if setup is not None:
            table = pd.concat([table.assign(phase="steady"), setup.assign(phase="setup")], ignore_index=True)
        click.echo(table_csv(table) if fmt == "csv" else table_json(table, data), nl=fmt == "json")
    else:
        console().print(render_profile(data, table, top=top, include_setup=include_setup))
