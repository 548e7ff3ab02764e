"""`rooflinectl report`: one self-contained, interactive HTML file of a profile, two profiles
compared, or the ranks of a job side by side.

Analysis (advice, diff, matching) runs in rooflinectl/html_report.py; outputs/report_data.py turns its results into
the page's data and outputs/report_html.py writes the page.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from rooflinectl.errors import RooflineError
from rooflinectl.html_report import checked_report_path, report_document

if TYPE_CHECKING:  # pandas is imported when a report is written, not by `profile --help`
    from rooflinectl.profile_model import ProfileData

DEFAULT_REPORT_PATH = "report.html"


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

    The page holds the summary, the chart, the kernel table, the advice and the clocks.

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
