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

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from rooflinectl.cli.common import top_options
from rooflinectl.cli.output_paths import checked_output
from rooflinectl.cli.profile_cmd import IterationsMode, is_capture, is_profile
from rooflinectl.errors import UsageError, printable
from rooflinectl.schema import DEFAULT_PROFILE_PATH

if TYPE_CHECKING:
    from rooflinectl.capture.session import Capture
    from rooflinectl.ceilings.model import Ceilings
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
    """The profile of a saved trace and where its roofs come from: what `analyse` writes, and what
    `rooflinectl.trace_handler` gives inside a user's own torch.profiler schedule (one path)."""
    from rooflinectl.pipeline import build_profile

    capture = _load(trace)
    ceilings, roofs_from = _ceilings(capture)
    if before_analysis is not None:
        before_analysis()
    data, _ = build_profile(capture, command=command, completed=True, exit_code=None, ceilings=ceilings,
                            iterations_mode=iterations_mode)
    return data, roofs_from


def _analysis_imports() -> None:
    """The analysis's modules (torch for the cost model's op schemas, pandas): about 2 s of
    imports, made while the reading workers decode a large trace instead of before."""
    import rooflinectl.cli.profile_output  # noqa: F401 - imported for its side effect: loaded now
    import rooflinectl.outputs.table  # noqa: F401
    import rooflinectl.pipeline  # noqa: F401


def _load(path: Path) -> Capture:
    """The capture in the file: a capture file as saved, or a Chrome trace read into one."""
    # no torch and no pandas before the read: they load while its workers decode (_analysis_imports)
    from rooflinectl.capture.chrome_json import TraceFormatError
    from rooflinectl.capture.trace import read_chrome_trace

    try:
        if is_capture(path):
            from rooflinectl.capture.session import load_capture

            return load_capture(str(path))
        trace = read_chrome_trace(path, meanwhile=_analysis_imports)
    except TraceFormatError as exc:
        raise UsageError(str(exc)) from None
    except (KeyError, TypeError, AttributeError) as exc:  # JSON, but not laid out as either
        raise UsageError(f"{path} is not a Chrome trace or a capture file rooflinectl can read "
                         f"(missing or odd field: {exc}).") from None
    if not trace.ops and not trace.kernels:
        raise UsageError(f"{path} holds no CPU ops and no kernels: nothing to analyse "
                         "(is it torch.profiler's trace, with its traceEvents?).")
    from rooflinectl.capture.session import Capture

    # the device's name comes with the roofs (pipeline.build_profile takes the ceilings' name)
    device_kind = "cuda" if trace.kernels else "cpu"
    return Capture(device_kind=device_kind, trace=trace, metadata={"device_kind": device_kind, "source_file": str(path)})


def _recorded_gpu(capture: Capture) -> dict[str, Any]:
    """The deviceProperties entry of the GPU most kernels ran on (the first entry if none says);
    a capture file from before device properties were kept gives its device's name alone."""
    trace = capture.trace
    properties = trace.device_properties if trace else []
    if not properties:
        name = capture.metadata.get("device_name")
        return {"name": name} if name else {}
    devices = Counter(k.device for k in (trace.kernels[:10_000] if trace else []))
    busiest = devices.most_common(1)[0][0] if devices else None
    return next((p for p in properties if p.get("id") == busiest), properties[0])


def _ceilings(capture: Capture) -> tuple[Ceilings, str]:
    """The roofs, and where they come from. GPU: the spec roofs of the GPU the trace names. CPU:
    this machine's roofs (a trace says nothing of the CPU it ran on), and the line printed says so."""
    from rooflinectl.ceilings import current_ceilings, recorded_gpu_ceilings

    if capture.device_kind != "cuda":
        ceilings = current_ceilings("cpu")
        return ceilings, f"this machine's CPU ({ceilings.device_name}): the trace does not say which CPU it ran on"
    ceilings = recorded_gpu_ceilings(_recorded_gpu(capture))
    if ceilings.details.get("spec_entry") is None:  # not in the spec table: nothing of it is known for sure
        return ceilings, (f"estimates: the {ceilings.device_name} the trace names is not in the spec table "
                          "(not measured here; `rooflinectl ceilings` lists the GPUs known)")
    return ceilings, f"the spec roofs of the {ceilings.device_name} the trace names (not measured here)"
