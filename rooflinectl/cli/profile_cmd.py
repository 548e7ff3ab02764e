"""`rooflinectl profile TARGET [-- ARGS]`: run a script or FILE.py:FUNCTION, write the profile."""

from __future__ import annotations

import sys

import click

from rooflinectl.capture.runner import run_function, run_script, split_target
from rooflinectl.capture.session import save_capture
from rooflinectl.ceilings import resolve_device_kind
from rooflinectl.cli.common import console
from rooflinectl.errors import UsageError
from rooflinectl.outputs.profile_file import DEFAULT_PROFILE_PATH, save_profile
from rooflinectl.outputs.table import render_profile
from rooflinectl.pipeline import profile_data


class IterationsMode(click.ParamType):
    """auto, none, or a positive whole number."""

    name = "auto|none|N"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = str(value).strip().lower()
        if text in ("auto", "none") or (text.isdigit() and int(text) >= 1):
            return text
        self.fail(f"{value!r} is not auto, none or a positive number of iterations", param, ctx)


@click.command("profile", context_settings={"ignore_unknown_options": True})
@click.argument("target")
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED)
@click.option("-o", "--output", default=DEFAULT_PROFILE_PATH, show_default=True, help="profile file to write")
@click.option("--warmup", type=click.IntRange(min=0), default=3, show_default=True,
              help="unprofiled calls first (FILE.py:FUNCTION only)")
@click.option("--iters", type=click.IntRange(min=1), default=10, show_default=True,
              help="profiled calls (FILE.py:FUNCTION only)")
@click.option("--device", type=click.Choice(["auto", "cuda", "cpu"]), default="auto", show_default=True,
              help="which activity to profile: CUDA kernels, or CPU ops on a machine without a GPU")
@click.option("--iterations", "iterations_mode", type=IterationsMode(), default="auto", show_default=True,
              help="script mode without a region: auto (find the loop's iterations, count the steady state, "
                   "keep setup apart), none (count the whole run), or N (count the last N iterations found)")
@click.option("--top", type=click.IntRange(min=1), default=15, show_default=True, help="rows in the table")
@click.option("--save-trace", type=click.Path(dir_okay=False), default=None,
              help="also write the raw events (gzipped JSON) for re-analysis and test data")
@click.option("-q", "--quiet", is_flag=True, help="write the profile, print no table")
@click.pass_context
def command(ctx: click.Context, target: str, script_args: tuple[str, ...], output: str, warmup: int, iters: int,
            device: str, iterations_mode: str, top: int, save_trace: str | None, quiet: bool) -> None:
    """Run TARGET (a script, or FILE.py:FUNCTION) under the profiler and print its top kernels.

    Arguments after `--` go to the script (options rooflinectl does not know go there too). A failing script still gets its
    partial profile written, and rooflinectl exits with the script's own exit code.
    """
    path, function = split_target(target)
    if function is not None and script_args:
        raise UsageError(f"{target} is a function target: it takes no script arguments ({' '.join(script_args)}).")
    device_kind = resolve_device_kind(device)  # --device cuda without CUDA: one sentence, exit 3
    if function is None:
        outcome = run_script(path, list(script_args), device_kind)
    else:
        outcome = run_function(path, function, warmup=warmup, iters=iters, device_kind=device_kind)
    data = profile_data(outcome.capture, command=["rooflinectl", *sys.argv[1:]], completed=outcome.completed,
                        exit_code=outcome.exit_code, iterations_mode=iterations_mode)
    save_profile(data, output)
    if save_trace and outcome.capture.trace is not None:
        save_capture(outcome.capture, save_trace)
    if not quiet:
        console().print(render_profile(data, data.kernels, top=top))
        click.echo(f"profile written to {output}" + ("" if outcome.completed else " (incomplete run)"), err=True)
    if outcome.exit_code:
        ctx.exit(outcome.exit_code)
