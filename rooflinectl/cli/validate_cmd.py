"""`rooflinectl validate [PROFILE]`: the analytic cost model against Nsight Compute's counters."""

from __future__ import annotations

from pathlib import Path

import click

from rooflinectl.analysis.validate import agreement, validate_families, validate_rows
from rooflinectl.cli.common import emit, format_option, terminal_width, top_options
from rooflinectl.errors import UsageError
from rooflinectl.outputs.formats import chosen_format, render
from rooflinectl.outputs.profile_file import DEFAULT_PROFILE_PATH, load_profile


@click.command("validate")
@click.argument("profile", required=False)
@top_options(20, "kernel groups listed")
@format_option("validate")
@click.option("-o", "--output", default=None, metavar="FILE",
              help="write to FILE instead of the terminal ('-': standard output); .csv, .json, .md choose the format")
@click.option("--force", is_flag=True, help="replace an -o file that is an input, or not a report rooflinectl wrote")
def command(profile: str | None, top: int, fmt: str | None, output: str | None, force: bool) -> None:
    """Check analytic FLOPs and bytes against measured counters.

    Per kernel group and per op family: the ratios (analytic / measured), and whether both place
    the kernel on the same side of the ridge.

    PROFILE (default: rooflinectl.profile.json here) must hold counters: `rooflinectl profile
    --counters ncu` (or `--counters auto`, which says when ncu cannot run).
    """
    fmt = chosen_format("validate", fmt, output)
    path = profile or DEFAULT_PROFILE_PATH
    data = load_profile(path)
    counters = data.summary.get("counters") or {}
    if counters.get("status") != "measured":
        why = f" (the counters run {counters['status']}: {counters.get('reason', '')})" if counters.get("status") else ""
        raise UsageError(f"{profile or 'the profile'} holds no counters{why}: profile it with "
                         "`rooflinectl profile --counters ncu`.")
    rows = validate_rows(data.kernels, data.ceilings)
    families = validate_families(rows)
    agreed = agreement(rows, float(data.kernels["time_s"].sum()), data.kernels)
    width = terminal_width()
    emit(render("validate", fmt, summary=data.summary, rows=rows, families=families, agreement=agreed,
                top=top or len(rows)), output, width, inputs=[Path(path)], force=force)
