"""`rooflinectl analyse TRACE`: the profile of a saved trace, without running anything.

TRACE is torch.profiler's Chrome trace (what `prof.export_chrome_trace(...)` or `profile
--save-trace` writes, `.json` or `.json.gz`) or rooflinectl's capture file (`profile
--save-capture`). The attribution and analysis are `profile`'s. The roofs are the spec roofs of
the GPU the trace names (its deviceProperties): that GPU need not be on this machine, so nothing is
measured. A trace lacks what only a live capture records: tensor identities (which inputs are one
tensor), the dtypes of tensor-list elements (torch.cat's inputs: their cost stays unknown, with
the reason in its note) and the math modes (TF32) the run had; the metadata names the file
(source_file).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from rooflinectl.cli.common import top_options
from rooflinectl.cli.profile_cmd import IterationsMode, is_capture, is_profile
from rooflinectl.errors import UsageError, printable
from rooflinectl.outputs.output_paths import checked_output
from rooflinectl.schema import DEFAULT_PROFILE_PATH

if TYPE_CHECKING:
    from rooflinectl.capture.run.session import Capture
    from rooflinectl.profile_model import ProfileData


@click.command("analyse")
@click.argument("trace", type=click.Path(dir_okay=False, path_type=Path))
@click.option("-o", "--output", default=DEFAULT_PROFILE_PATH, show_default=True, help="profile file to write")
@click.option("--force", is_flag=True, help="replace an -o file that is not a rooflinectl profile (never a source file)")
@click.option("--iterations", "iterations_mode", type=IterationsMode(), default="auto", show_default=True,
              help="steady state: find the loop's iterations (auto), count the whole trace (none), or the last N")
@top_options(15)
@click.option("-q", "--quiet", is_flag=True, help="write the profile, print no table")
def command(trace: Path, output: str, force: bool, iterations_mode: str, top: int, quiet: bool) -> None:
    """Build a profile from a saved torch.profiler trace, not run again.

    TRACE is torch.profiler's Chrome trace (.json, .json.gz) or a --save-capture file.

    The roofs are the spec roofs of the GPU the trace names, not this machine's. The profile then
    works with show, plot, advise and diff like one from `profile`.
    """
    from rooflinectl.capture.progress import report
    from rooflinectl.cli.status import status_line

    if not trace.is_file():
        raise UsageError(f"{trace} is not a file: give a Chrome trace (.json, .json.gz) or a capture file.")
    target = checked_output(output, what="profile", force=force, ours=is_profile, inputs=[trace])
    with status_line(enabled=not quiet) as line:
        line.workload(f"reading {trace}")
        from rooflinectl.cli.profile_output import ProfileWriter

        writer = ProfileWriter(target, output, ["rooflinectl", "analyse", str(trace)], iterations_mode)
        data, roofs_from = profile_of_trace(trace, command=writer.command, iterations_mode=iterations_mode,
                                            before_analysis=lambda: report(f"analysing {trace}"))
        status, message = writer.save(data, completed=True)
    if not quiet:
        from rooflinectl.analysis.regroup import regroup
        from rooflinectl.cli.common import console, terminal_width
        from rooflinectl.outputs.table import render_profile

        width = terminal_width()
        console(width).print(render_profile(data, regroup(data.kernels, "kernel", data.ceilings), top=top, width=width))
    click.echo(f"roofs: {printable(roofs_from)}", err=True)
    click.echo(message, err=True)
    click.get_current_context().exit(status)


def profile_of_trace(trace: Path, *, command: list[str], iterations_mode: str = "auto",
                     before_analysis: Callable[[], None] | None = None) -> tuple[ProfileData, str]:
    """The profile of a saved trace or capture file, and where its roofs come from."""
    from rooflinectl.saved_trace import profile_of_capture

    return profile_of_capture(_load(trace), command=command, iterations_mode=iterations_mode,
                              before_analysis=before_analysis)


def _analysis_imports() -> None:
    """The analysis's modules (torch for the cost model's op schemas, pandas): about 2 s of
    imports, made while the reading workers decode a large trace instead of before."""
    import rooflinectl.cli.profile_output  # noqa: F401 - imported for its side effect: loaded now
    import rooflinectl.outputs.table  # noqa: F401
    import rooflinectl.pipeline  # noqa: F401


def _load(path: Path) -> Capture:
    """The capture in the file: a capture file as saved, or a Chrome trace read into one."""
    # no torch and no pandas before the read: they load while its workers decode (_analysis_imports)
    from rooflinectl.capture.read.chrome_json import TraceFormatError
    from rooflinectl.saved_trace import capture_of_chrome_trace

    if not is_capture(path):
        return capture_of_chrome_trace(path, meanwhile=_analysis_imports)
    from rooflinectl.capture.run.session import load_capture

    try:
        return load_capture(str(path))
    except TraceFormatError as exc:
        raise UsageError(str(exc)) from None
    except (KeyError, TypeError, AttributeError) as exc:  # JSON, but not laid out as a capture
        raise UsageError(f"{path} is not a Chrome trace or a capture file rooflinectl can read "
                         f"(missing or odd field: {exc}).") from None
