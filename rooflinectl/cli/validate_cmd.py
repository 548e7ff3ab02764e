"""`rooflinectl validate [PROFILE]`: the analytic cost model against Nsight Compute's counters."""

from __future__ import annotations

import click

from rooflinectl.analysis.validate import agreement, validate_families, validate_rows
from rooflinectl.cli.common import console
from rooflinectl.errors import UsageError
from rooflinectl.outputs.profile_file import DEFAULT_PROFILE_PATH, load_profile
from rooflinectl.outputs.table import table_csv
from rooflinectl.outputs.validate_render import render_validate, validate_json, validate_markdown


@click.command("validate")
@click.argument("profile", required=False)
@click.option("--top", type=click.IntRange(min=1), default=20, show_default=True, help="kernel groups listed")
@click.option("--format", "fmt", type=click.Choice(["table", "markdown", "csv", "json"]), default="table",
              show_default=True)
def command(profile: str | None, top: int, fmt: str) -> None:
    """Check analytic FLOPs and bytes against measured counters.

    Analytic FLOPs and bytes against measured ones, per kernel group and per op family, with ratios
    (analytic / measured) and whether both place the kernel on the same side of the ridge.

    PROFILE (default: rooflinectl.profile.json here) must hold counters: `rooflinectl profile
    --counters ncu` (or `--counters auto`, which says when ncu cannot run).
    """
    data = load_profile(profile or DEFAULT_PROFILE_PATH)
    counters = data.summary.get("counters") or {}
    if counters.get("status") != "measured":
        why = f" (the counters run {counters['status']}: {counters.get('reason', '')})" if counters.get("status") else ""
        raise UsageError(f"{profile or 'the profile'} holds no counters{why}: profile it with "
                         "`rooflinectl profile --counters ncu`.")
    rows = validate_rows(data.kernels, data.ceilings)
    families = validate_families(rows)
    agreed = agreement(rows, float(data.kernels["time_s"].sum()), data.kernels)
    if fmt == "csv":
        click.echo(table_csv(rows), nl=False)
    elif fmt == "json":
        click.echo(validate_json(data.summary, rows, families, agreed))
    elif fmt == "markdown":
        click.echo(validate_markdown(data.summary, rows, families, agreed, top), nl=False)
    else:
        console().print(render_validate(data.summary, rows, families, agreed, top))
