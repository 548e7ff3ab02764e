"""`rooflinectl show [PROFILE]`: the kernel table again, by kernel, op or module."""

from __future__ import annotations

import click

from rooflinectl.analysis.regroup import regroup, unknown_costs
from rooflinectl.analysis.selection import SORT_KEYS, filter_groups, sort_groups
from rooflinectl.cli.common import WIDE_WIDTH, emit, format_option, terminal_width, top_options
from rooflinectl.cli.profiles import load_arguments_paths
from rooflinectl.errors import UsageError
from rooflinectl.outputs.formats import chosen_format, render
from rooflinectl.profile_model import ProfileData
from rooflinectl.units import percent


@click.command("show")
@click.argument("profiles", nargs=-1)
@click.option("--by", type=click.Choice(["kernel", "op", "module", "line"]), default="kernel", show_default=True,
              help="one row per kernel (summed over modules), per op, per module (backward and optimizer work "
                   "too), or per line of the user's source (docs/source-lines.md)")
@top_options(15)
@click.option("--sort", "sort_key", type=click.Choice(list(SORT_KEYS)), default="time", show_default=True,
              help="order of the rows: largest first (efficiency: lowest first)")
@click.option("--filter", "filter_regex", default=None, metavar="REGEX",
              help="only groups whose kernel, op, module or op family matches, as `plot --filter`")
@format_option("profile")
@click.option("--wide", is_flag=True, help="every column, whatever the terminal's width")
@click.option("--unknown", is_flag=True, help="list the ops and kernels without a cost, their time and why")
@click.option("--include-setup", is_flag=True,
              help="also the work outside the steady state (weight upload, warm-up, compilation); "
                   "csv/json: as rows with phase=setup")
@click.option("-o", "--output", default=None, metavar="FILE",
              help="write to FILE instead of the terminal ('-': standard output); .csv, .json choose the format")
@click.option("--force", is_flag=True, help="replace an -o file that is an input, or not a report rooflinectl wrote")
def command(profiles: tuple[str, ...], by: str, top: int, sort_key: str, filter_regex: str | None, fmt: str | None,
            wide: bool, unknown: bool, include_setup: bool, output: str | None, force: bool) -> None:
    """Print the kernel table of a profile, as text, CSV or JSON.

    PROFILE defaults to rooflinectl.profile.json here, else this folder's
    rooflinectl.profile.rank*.json.

    The table fits the terminal: at 80 columns the rates and byte counts give way to the names;
    --wide shows them all, csv and json hold every column of the profile. Several rank profiles
    of one job (a folder, a glob, a list): per-rank step time and communication, the straggler,
    the collectives against the link, and the kernel table averaged over the ranks with the
    fastest and slowest rank's time. The table gives calls, time, FLOPs and bytes per iteration
    (`time/it`); csv and json hold totals and an `iterations` column.
    """
    fmt = chosen_format("profile", fmt, output)
    data, notes, paths = load_arguments_paths(profiles)
    for note in notes:
        click.echo(f"rooflinectl: {note}", err=True)
    width = WIDE_WIDTH if wide else terminal_width()
    if unknown:
        rows = unknown_costs(data.kernels)
        emit(render("unknown", fmt, data=data, table=rows, top=top), output, width, inputs=paths, force=force)
        return
    grouped = regroup(data.kernels, by, data.ceilings)
    table = sort_groups(filter_groups(grouped, filter_regex), sort_key)
    if filter_regex and table.empty:
        raise UsageError(f"--filter {filter_regex!r} matches no group in {' '.join(map(str, paths))}.")
    if filter_regex and fmt == "table":  # what the filter left out, as plot's note says it
        share = table["time_s"].sum() / grouped["time_s"].sum() if grouped["time_s"].sum() > 0 else 0.0
        click.echo(f"rooflinectl: --filter {filter_regex!r}: {len(table)} of {len(grouped)} groups, "
                   f"{percent(share)} of kernel time", err=True)
    if include_setup and data.setup_kernels is not None:
        setup = sort_groups(filter_groups(regroup(data.setup_kernels, by, data.ceilings), filter_regex), sort_key)
        data = ProfileData(data.kernels, data.ceilings, data.metadata, data.summary, setup)
    emit(render("profile", fmt, data=data, table=table, top=top, by=by, width=None if wide else width,
                include_setup=include_setup), output, width, inputs=paths, force=force)
