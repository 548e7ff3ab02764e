"""The HTML report of profiles in memory (`rooflinectl report`, `profile --report`,
`Profile.report`): the analysis it shows run here (advice, diff, matching), then written by
outputs/report_html.py (outputs/report_data.py turns the results into the page's data).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rooflinectl._version import __version__
from rooflinectl.errors import UsageError
from rooflinectl.outputs.output_paths import checked_output, holds_marker

if TYPE_CHECKING:  # pandas is imported when a report is written, not by `profile --help`
    from rooflinectl.profile_model import ProfileData

REPORT_SUFFIXES = (".html", ".htm")


def checked_report_path(path: str, force: bool = False) -> Path:
    """The report's path made absolute, once it is known to end in .html, to be writable, and not
    to be an HTML file of someone else's (one rooflinectl wrote says so in its head; force replaces any)."""
    from rooflinectl.outputs.report_html import GENERATOR_MARKER

    if Path(path).suffix.lower() not in REPORT_SUFFIXES:
        raise UsageError(f"Cannot write {path}: the report is an HTML file (.html or .htm).")
    return checked_output(path, what="report", ours=holds_marker(GENERATOR_MARKER), force=force)


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
