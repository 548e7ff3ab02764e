"""`rooflinectl ceilings [--measure]`: what this GPU (or CPU) can do, per dtype and memory level."""

from __future__ import annotations

from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from rooflinectl.ceilings import DEFAULT_BUDGET_S, DEVICE_KINDS, current_ceilings, measure_ceilings
from rooflinectl.ceilings.conditions import busy_reason, conditions_text, stability_text
from rooflinectl.cli.common import emit, format_option, terminal_width
from rooflinectl.cli.values import FiniteFloatRange
from rooflinectl.errors import RooflineError
from rooflinectl.outputs.formats import chosen_format, render


def _measure_with_bar(device: str, refresh: bool, budget_s: float):
    """Measure (or read the cache) with a progress bar on stderr, so stdout stays clean JSON."""
    bar = Progress(TextColumn("{task.description:<20}"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn(), console=Console(stderr=True), transient=True)
    task = bar.add_task("measuring", total=None)

    def progress(name: str, done: int, total: int) -> None:
        bar.update(task, description=name, completed=done, total=total)

    with bar:
        return measure_ceilings(device, refresh=refresh, budget_s=budget_s, progress=progress)


def measurement_line(details: dict[str, Any]) -> str:
    """What --measure did: measured now (at what load and clocks, in how many rounds, whether the
    machine was busy) or read the cache (from when); with the command that measures again."""
    conditions = details.get("measured_conditions")
    again = "`rooflinectl ceilings --measure --refresh` measures again"
    if not details.get("measured_now"):
        taken = f", {conditions_text(conditions)}" if conditions else ""
        return f"the cached measurement ({details.get('measured_at') or 'date not known'}{taken}) is used; {again}"
    line = f"measured at {conditions_text(conditions or {})}: {stability_text(details.get('stability') or {})}"
    busy = busy_reason(conditions or {})
    if busy:
        line += f"; the machine was busy ({busy}), so the roofs may be low: on an idle machine, {again}"
    return line


@click.command("ceilings")
@click.option("--measure", is_flag=True, help="Measure the ceilings (or use the cached measurement).")
@click.option("--refresh", is_flag=True, help="Re-measure even when a cached measurement exists.")
@click.option("--device", type=click.Choice(DEVICE_KINDS), default="auto", show_default=True,
              help="Which device: the GPU when there is one (auto), or the CPU.")
@format_option("ceilings")
@click.option("-o", "--output", default=None, metavar="FILE",
              help="write to FILE instead of the terminal ('-': standard output); .json chooses the format")
@click.option("--force", is_flag=True, help="replace an -o file that is not a report rooflinectl wrote")
@click.option("--budget-s", type=FiniteFloatRange(1, 600), default=DEFAULT_BUDGET_S, show_default=True,
              help="Time allowed for measuring, seconds.")
@click.pass_context
def command(ctx: click.Context, measure: bool, refresh: bool, device: str, fmt: str | None, output: str | None,
            force: bool, budget_s: float) -> None:
    """What this GPU or CPU can do: spec, detected and measured roofs.

    Also the ridge points, and what could not be read.

    Without --measure: spec figures (clock-scaled) plus any measurement cached earlier.
    --measure records the machine's load and clocks, repeats the measurement until two rounds
    agree within 5% (time allowing), and says so on stderr; --refresh measures again over the cache.
    """
    try:
        fmt = chosen_format("ceilings", fmt, output)
        if measure or refresh:
            ceilings = _measure_with_bar(device, refresh, budget_s)
        else:
            ceilings = current_ceilings(device)
    except RooflineError as exc:
        click.echo(f"rooflinectl: {exc}", err=True)
        ctx.exit(exc.exit_code)
        return
    if measure or refresh:
        click.echo(f"rooflinectl: {measurement_line(ceilings.details)}", err=True)
    width = terminal_width()
    emit(render("ceilings", fmt, ceilings=ceilings, width=width), output, width, force=force)
