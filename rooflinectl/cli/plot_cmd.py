"""`rooflinectl plot`: the roofline chart of a profile, a before/after comparison, or a terminal sketch."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import click

from rooflinectl.analysis.selection import filter_groups
from rooflinectl.cli.common import top_options
from rooflinectl.cli.profiles import (
    expand,
    load_arguments_paths,
    load_profile,
    merge_loaded,
    rank_set_problem,
)
from rooflinectl.errors import RooflineError, UsageError
from rooflinectl.outputs.output_paths import check_writable
from rooflinectl.profile_model import ProfileData

if TYPE_CHECKING:
    from matplotlib.figure import Figure

MAX_DPI = 1200  # beyond this a chart is tens of thousands of pixels wide


def plot_files(profiles: tuple[str, ...], output: str | None, *, top: int, color_by: str, filter_regex: str | None,
               title: str | None, dpi: float, terminal: bool, clocks: bool = False,
               levels: bool = False) -> list[str]:
    """Load one or two profiles and write the chart; returns the lines to tell the user."""
    data, paths, messages = _chart_profiles(profiles)
    if output is None and not terminal:
        output = "roofline.png"
    _check_options(data, paths, output, top=top, dpi=dpi, terminal=terminal, clocks=clocks, levels=levels,
                   filter_regex=filter_regex)
    top = top or max(len(d.kernels) for d in data)  # 0: every group
    if terminal:
        _draw_terminal(data, paths, top, filter_regex)
    if output is not None:
        fig = _chart(data, paths, top=top, color_by=color_by, filter_regex=filter_regex, title=title, dpi=dpi,
                     clocks=clocks, levels=levels)
        if output == "-":  # PNG on standard output, for a pipe
            import sys

            fig.savefig(sys.stdout.buffer, format="png", dpi=dpi, facecolor="white")
            sys.stdout.buffer.flush()
        else:
            from rooflinectl.outputs.plot import save_figure

            save_figure(fig, output, dpi=dpi)
            messages.append(f"wrote {output}")
    return messages


def _check_options(data: list[ProfileData], paths: list[str], output: str | None, *, top: int, dpi: float,
                   terminal: bool, clocks: bool, levels: bool, filter_regex: str | None) -> None:
    """Every option problem in one sentence before anything is drawn."""
    from rooflinectl.outputs.plot import SUPPORTED_EXTENSIONS

    if output is not None and output != "-" and Path(output).suffix.lower() not in SUPPORTED_EXTENSIONS:
        raise UsageError(f"Cannot write {output}: the chart is saved as .png, .svg or .pdf.")
    if output is not None and output != "-":
        check_writable(Path(os.path.abspath(output)), output)  # a missing folder, a read-only place: said before drawing
    if top < 0:
        raise UsageError("--top must be 0 or more.")
    if clocks and (len(paths) == 2 or output is None):
        raise UsageError("--clocks draws the clock strip under one profile's chart: give one profile and -o FILE.")
    if levels and (len(paths) == 2 or terminal or clocks):
        raise UsageError("--levels draws one profile with counters, as a chart file (-o), without --terminal or --clocks.")
    if not dpi > 0 or dpi > MAX_DPI:
        raise UsageError(f"--dpi must be more than 0 and at most {MAX_DPI:g}, not {dpi:g}.")
    for path, profile in zip(paths, data):
        if filter_regex and filter_groups(profile.kernels, filter_regex).empty:
            raise UsageError(f"--filter {filter_regex!r} matches no group in {path}: there would be nothing to draw.")


def _draw_terminal(data: list[ProfileData], paths: list[str], top: int, filter_regex: str | None) -> None:
    """`--terminal`: the character roofline of each profile (two: before, then after)."""
    from rooflinectl.cli.common import console
    from rooflinectl.outputs.plot_terminal import render_terminal

    out = console()
    for path, profile in zip(paths, data):
        if len(data) == 2:
            out.rule(_short_name(path))
        if filter_regex:
            profile = replace(profile, kernels=filter_groups(profile.kernels, filter_regex))
        out.print(render_terminal(profile, width=min(out.width, 140), height=22, top=top))


def _chart(data: list[ProfileData], paths: list[str], *, top: int, color_by: str, filter_regex: str | None,
           title: str | None, dpi: float, clocks: bool, levels: bool) -> Figure:
    """The chart: one profile (with what analysis/charts.py computed for it), its memory levels, or
    two compared (matched by analysis/charts.compare_for_chart)."""
    from rooflinectl.analysis.charts import chart_model, compare_for_chart

    if levels:
        from rooflinectl.outputs.plot_levels import plot_levels

        return plot_levels(data[0], top=top, filter_regex=filter_regex, title=title, dpi=dpi)
    if len(data) == 2:
        from rooflinectl.outputs.plot_compare import plot_comparison

        names = (_short_name(paths[0]), _short_name(paths[1]))
        return plot_comparison(data[0], data[1], compare_for_chart(data[0], data[1], filter_regex), top=top,
                               title=title, names=names, dpi=dpi)
    from rooflinectl.outputs.plot import plot_profile

    return plot_profile(data[0], model=chart_model(data[0], clocks=clocks), top=top, color_by=color_by,
                        filter_regex=filter_regex, title=title, dpi=dpi)


def _chart_profiles(arguments: tuple[str, ...]) -> tuple[list[ProfileData], list[str], list[str]]:
    """The profiles to draw and their names: one profile or rank set (a folder, a glob, a list of
    one job's rank files: merged), or two to compare (each a file or a rank set)."""
    if not arguments:
        data, notes, paths = load_arguments_paths(())
        return [data], [str(paths[0])], notes
    per_argument = [expand([a]) for a in arguments]
    loaded = {p: load_profile(p) for paths in per_argument for p in paths}  # each file read once
    expanded = [p for paths in per_argument for p in paths]
    if len(arguments) == 2 and (len(expanded) < 2 or rank_set_problem([loaded[p] for p in expanded]) is not None):
        (a, notes_a), (b, notes_b) = (merge_loaded([loaded[p] for p in paths], paths) for paths in per_argument)
        return [a, b], list(arguments), notes_a + notes_b
    # one profile, or one job's ranks (else one sentence why not)
    data, notes = merge_loaded([loaded[p] for p in expanded], expanded)
    return [data], [arguments[0]], notes


def _short_name(path: str) -> str:
    """'runs/naive.profile.json' -> 'naive': what the chart calls each side of a comparison."""
    return Path(path).name.removesuffix(".json").removesuffix(".profile") or Path(path).name


@click.command("plot")
@click.argument("profiles", nargs=-1)
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Chart file: .png, .svg or .pdf ('-': PNG on stdout; default roofline.png unless --terminal).")
@top_options(10, "groups listed beside the chart, largest first")
@click.option("--color-by", type=click.Choice(["bound", "family"]), default="bound", show_default=True,
              help="Colour points by what bounds them or by op family.")
@click.option("--filter", "filter_regex", default=None, metavar="REGEX",
              help="Only groups whose kernel, op, module or op family matches.")
@click.option("--title", default=None, help="Chart title (default: the device name).")
@click.option("--dpi", type=float, default=120, show_default=True, help="Resolution of PNG output (1 to 1200).")
@click.option("--terminal", is_flag=True,
              help="Draw a coarse roofline in the terminal (for SSH sessions); with two profiles, one after the other.")
@click.option("--clocks", is_flag=True, help="Add a strip under the chart: SM clock and power over the run (NVML).")
@click.option("--levels", is_flag=True,
              help="Hierarchical roofline from counters: one point per memory level (DRAM, L2, L1) per group.")
def command(profiles: tuple[str, ...], output: str | None, top: int, color_by: str, filter_regex: str | None,
            title: str | None, dpi: float, terminal: bool, clocks: bool, levels: bool) -> None:
    """Draw the roofline chart of a profile, or BEFORE -> AFTER of two.

    PROFILE defaults to ./rooflinectl.profile.json; with two, an arrow shows each group's move.

    Point area is the group's share of kernel time, colour what bounds it, marker its precision;
    groups of unknown cost are listed on the chart, never dropped.
    """
    try:
        for line in plot_files(profiles, output, top=top, color_by=color_by, filter_regex=filter_regex,
                               title=title, dpi=dpi, terminal=terminal, clocks=clocks, levels=levels):
            click.echo(line)
    except RooflineError as exc:  # the group does this too; here so the command stands alone
        click.echo(f"rooflinectl: {exc}", err=True)
        raise click.exceptions.Exit(exc.exit_code) from None
