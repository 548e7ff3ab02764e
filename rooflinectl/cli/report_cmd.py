"""`rooflinectl report`: one self-contained, interactive HTML file of a profile, two profiles
compared, or the ranks of a job side by side.

Analysis (advice, diff, matching) runs here; outputs/report_data.py only turns its results into
the page's data and outputs/report_html.py writes the page.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from rooflinectl._version import __version__
from rooflinectl.cli.output_paths import checked_output, holds_marker
from rooflinectl.errors import RooflineError, UsageError

if TYPE_CHECKING:  # pandas is imported when a report is written, not by `profile --help`
    from rooflinectl.profile_model import ProfileData

REPORT_SUFFIXES = (".html", ".htm")
DEFAULT_REPORT_PATH = "report.html"


def checked_report_path(path: str, force: bool = False) -> Path:
    """The report's path made absolute, once it is known to end in .html, to be writable, and not
    to be an HTML file of someone else's (one rooflinectl wrote says so in its head; force replaces any)."""
    from rooflinectl.outputs.report_html import GENERATOR_MARKER

    if Path(path).suffix.lower() not in REPORT_SUFFIXES:
        raise UsageError(f"Cannot write {path}: the report is an HTML file (.html or .htm).")
    return checked_output(path, what="report", ours=holds_marker(GENERATOR_MARKER), force=force)


def report_path_option(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """`profile --report FILE`: checked before the script runs (a wrong suffix, a folder that is
    not there), made absolute (the script may chdir)."""
    return None if value is None else str(checked_report_path(value))


def _name(path: Path | str) -> str:
    """'runs/naive.profile.json' -> 'naive'."""
    p = Path(path)
    return p.name.removesuffix(".json").removesuffix(".profile") or p.name


def load_report_profiles(arguments: tuple[str, ...]) -> tuple[str, list[ProfileData], list[str], list[str]]:
    """(mode, profiles, names, notes): one profile ("single"); a job's rank files ("ranks": the
    merged profile, then each rank's); or two profiles or rank sets to compare ("compare": base, new)."""
    from rooflinectl.cli.profiles import (
        default_paths,
        expand,
        load_profile,
        merge_loaded,
        rank_set_problem,
    )

    per_argument = [expand([a]) for a in arguments] if arguments else [default_paths()]
    loaded = {p: load_profile(p) for paths in per_argument for p in paths}
    expanded = [p for paths in per_argument for p in paths]
    if len(per_argument) == 2 and (len(expanded) < 2 or rank_set_problem([loaded[p] for p in expanded]) is not None):
        (base, notes_b), (new, notes_n) = (merge_loaded([loaded[p] for p in paths], paths) for paths in per_argument)
        names = [_name(arguments[0]), _name(arguments[1])]
        if names[0] == names[1]:  # a/rooflinectl.profile.json against b/rooflinectl.profile.json
            names = list(arguments)
        return "compare", [base, new], names, notes_b + notes_n
    merged, notes = merge_loaded([loaded[p] for p in expanded], expanded)
    if len(expanded) == 1:
        return "single", [merged], [_name(expanded[0])], notes
    ranks = [loaded[p] for p in expanded]
    names = ["all ranks (mean)"] + [f"rank {p.metadata.get('rank')}" for p in ranks]
    return "ranks", [merged, *sorted(ranks, key=lambda p: int(p.metadata.get("rank") or 0))], names, notes


def report_document(mode: str, profiles: list[ProfileData], names: list[str]) -> dict[str, Any]:
    """The page's data: the views, the advice on the first view's profile, and the comparison."""
    from rooflinectl.analysis.advice import Thresholds, advise
    from rooflinectl.analysis.charts import clock_strip_or_why
    from rooflinectl.outputs import report_data

    if mode == "compare":
        from rooflinectl.analysis.diff import diff_profiles
        from rooflinectl.analysis.matching import match_groups, per_iteration

        base, new = profiles
        comparison = report_data.comparison_view(diff_profiles(base, new),
                                                 match_groups(per_iteration(base), per_iteration(new)), base, new)
        comparison.update(base_name=names[0], new_name=names[1])
        views = [report_data.profile_view(new, names[1], clock_strip_or_why(new)),
                 report_data.profile_view(base, names[0], clock_strip_or_why(base))]
        advised, title = new, f"Roofline comparison: {names[0]} → {names[1]}"
    else:
        comparison = None
        views = [report_data.profile_view(p, n, clock_strip_or_why(p)) for p, n in zip(profiles, names)]
        advised = profiles[0]
        title = f"Roofline report: {views[0]['device'] or 'unknown device'}"
    advice = report_data.advice_view(advise(advised, Thresholds()))
    return report_data.report_document(views, advice, mode=mode, title=title, tool_version=__version__,
                                       comparison=comparison)


def write_profile_report(data: ProfileData, path: str | os.PathLike[str], name: str = "profile",
                         force: bool = False) -> str:
    """Write the report of one profile in memory (`profile --report`, Profile.report); returns what to tell the user."""
    from rooflinectl.outputs.report_html import write_report

    target = checked_report_path(str(path), force)
    write_report(report_document("single", [data], [name]), target)
    return f"report written to {path}"


def report_files(arguments: tuple[str, ...], output: str, force: bool = False) -> list[str]:
    """Load, analyse and write; returns the lines to tell the user."""
    from rooflinectl.outputs.report_html import write_report

    target = checked_report_path(output, force)  # said before the work
    mode, profiles, names, notes = load_report_profiles(arguments)
    write_report(report_document(mode, profiles, names), target)
    what = (f" ({names[0]} → {names[1]})" if mode == "compare"
            else f" ({len(profiles) - 1} ranks)" if mode == "ranks" else "")
    return [f"rooflinectl: {n}" for n in notes] + [f"report written to {output}{what}"]


@click.command("report")
@click.argument("profiles", nargs=-1)
@click.option("-o", "--output", default=DEFAULT_REPORT_PATH, show_default=True, metavar="FILE",
              help="The HTML file to write (one file: data, scripts and styles inside; opens from disk, offline).")
@click.option("--force", is_flag=True, help="Replace an -o file that is not a report rooflinectl wrote.")
def command(profiles: tuple[str, ...], output: str, force: bool) -> None:
    """Write one self-contained, interactive HTML report of profiles.

    One self-contained, interactive HTML report: summary, roofline, kernel table, advice, clocks.

    PROFILE defaults to ./rooflinectl.profile.json (else this folder's rank profiles). Two profiles
    (each a file or a job's rank files): a comparison, BEFORE -> AFTER arrows and the diff. The
    rank files of one job (a folder, a glob or a list): the ranks side by side.

    Exit codes: 0 written; 2 usage or input error (unreadable or invalid profile, output not .html,
    an existing HTML file rooflinectl did not write, without --force).
    """
    try:
        for line in report_files(profiles, output, force):
            click.echo(line, err=line.startswith("rooflinectl: "))
    except RooflineError as exc:
        click.echo(f"rooflinectl: {exc}", err=True)
        raise click.exceptions.Exit(exc.exit_code) from None
