"""`rooflinectl show [PROFILE]`: the kernel table again, by kernel, op or module."""

from __future__ import annotations

from functools import partial
from typing import Any

import click
import pandas as pd

from rooflinectl.analysis.regroup import regroup, unknown_costs
from rooflinectl.cli.common import (
    WIDE_WIDTH,
    FormatChoice,
    show_or_write,
    terminal_width,
)
from rooflinectl.cli.output_paths import write_text_output
from rooflinectl.cli.profiles import load_arguments_paths
from rooflinectl.outputs.table import render_profile, table_csv, table_json, unknown_table
from rooflinectl.profile_model import ProfileData


def _show(renderable: object, output: str | None, wide: bool, **check: Any) -> None:
    """Print to the terminal (its width, or unlimited with --wide), or write to -o FILE."""
    show_or_write(renderable, output, WIDE_WIDTH if wide else terminal_width(), **check)


@click.command("show")
@click.argument("profiles", nargs=-1)
@click.option("--by", type=click.Choice(["kernel", "op", "module", "line"]), default="kernel", show_default=True,
              help="one row per kernel (summed over modules), per op, per module (backward and optimizer work "
                   "too), or per line of the user's source (docs/source-lines.md)")
@click.option("--top", type=click.IntRange(min=0), default=15, show_default=True, help="rows in the table (0: all)")
@click.option("--format", "fmt", type=FormatChoice(("table", "csv", "json")), default="table", show_default=True)
@click.option("--wide", is_flag=True, help="every column, whatever the terminal's width")
@click.option("--unknown", is_flag=True, help="list the ops and kernels without a cost, their time and why")
@click.option("--include-setup", is_flag=True,
              help="also the work outside the steady state (weight upload, warm-up, compilation); "
                   "csv/json: as rows with phase=setup")
@click.option("-o", "--output", default=None, metavar="FILE",
              help="write to FILE instead of the terminal ('-': standard output)")
@click.option("--force", is_flag=True, help="replace an -o file that is an input, or not a report rooflinectl wrote")
def command(profiles: tuple[str, ...], by: str, top: int, fmt: str, wide: bool, unknown: bool, include_setup: bool,
            output: str | None, force: bool) -> None:
    """Print the kernel table of a profile, as text, CSV or JSON.

    Print the kernel table of PROFILE (default: rooflinectl.profile.json here, else this folder's
    rooflinectl.profile.rank*.json).

    The table fits the terminal: at 80 columns the rates and byte counts give way to the names;
    --wide shows them all, csv and json hold every column of the profile. Several rank profiles
    of one job (a folder, a glob, a list): per-rank step time and communication, the straggler,
    the collectives against the link, and the kernel table averaged over the ranks with the
    fastest and slowest rank's time.
    """
    data, notes, paths = load_arguments_paths(profiles)
    write = partial(write_text_output, output=output, inputs=paths, force=force)
    for note in notes:
        click.echo(f"rooflinectl: {note}", err=True)
    if unknown:
        rows = unknown_costs(data.kernels)
        if fmt == "csv":
            write(table_csv(rows))
        elif fmt == "json":
            write(table_json(rows, data) + "\n")
        else:
            _show(unknown_table(rows, top=top), output, wide, inputs=paths, force=force)
        return
    table = regroup(data.kernels, by, data.ceilings)
    setup = data.setup_kernels if include_setup and data.setup_kernels is not None else None
    if setup is not None:
        setup = regroup(setup, by, data.ceilings)
        data = ProfileData(data.kernels, data.ceilings, data.metadata, data.summary, setup)
    if fmt in ("csv", "json"):
        if setup is not None:
            table = pd.concat([table.assign(phase="steady"), setup.assign(phase="setup")], ignore_index=True)
        write(table_csv(table) if fmt == "csv" else table_json(table, data) + "\n")
    else:
        width = None if wide else terminal_width()
        _show(render_profile(data, table, top=top, by=by, width=width, include_setup=include_setup), output, wide,
              inputs=paths, force=force)
