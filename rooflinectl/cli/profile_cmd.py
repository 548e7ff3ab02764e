"""`rooflinectl profile TARGET [-- ARGS]`: run a script or FILE.py:FUNCTION, write the profile.

Under torchrun (`torchrun --nproc-per-node N -m rooflinectl profile train.py -- ARGS`) each rank
writes its own file (`{rank}` in -o, else `.rank<R>` before the suffix) and rank 0 says where they
are; `--nproc-per-node N` starts that through torch.distributed.run (cli/launch.py) and shows the
ranks together when they are done."""

from __future__ import annotations

import sys
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from rooflinectl.capture.run.distributed import rank_info, rank_output_path, rank_pattern
from rooflinectl.cli.common import top_options
from rooflinectl.cli.report_cmd import report_path_option
from rooflinectl.cli.script_args import ScriptCommand
from rooflinectl.cli.values import FiniteFloatRange
from rooflinectl.errors import OutputWriteError, UsageError
from rooflinectl.html_report import write_profile_report
from rooflinectl.outputs.output_paths import (
    STDOUT,
    checked_ncu_report,
    checked_output,
    holds_marker,
)
from rooflinectl.schema import (
    CAPTURE_FORMAT_NAME,
    DEFAULT_PROFILE_PATH,
    FORMAT_NAME,
    TOOL_NAME,
    TRACE_MARKER_KEY,
)

if TYPE_CHECKING:
    from rooflinectl.capture.run.runner import RunOutcome
    from rooflinectl.cli.profile_output import ProfileWriter
    from rooflinectl.profiling import ProfilePipeline, ProfileResult

# What runs the profile (torch through capture, pandas) is imported in the functions below:
# `rooflinectl --help`, `profile --help` and Tab completion must not pay seconds for it.
COUNTER_MODES = ("none", "ncu", "auto")  # --counters

# a capture as json writes it, as orjson writes it (no spaces), and captures before the format key
CAPTURE_MARKERS = (f'"format": "{CAPTURE_FORMAT_NAME}"', f'"format":"{CAPTURE_FORMAT_NAME}"', '{"device_kind": ')
TRACE_MARKER = f'{{"{TRACE_MARKER_KEY}": {{"tool": "{TOOL_NAME}"'


def is_capture(path: Path) -> bool:
    """Whether the file is a capture file of ours (`--save-capture`)."""
    return any(holds_marker(marker)(path) for marker in CAPTURE_MARKERS)


def is_profile(path: Path) -> bool:
    """Whether the file is a profile of ours (what `-o` may replace without --force)."""
    return holds_marker(f'"format": "{FORMAT_NAME}"')(path)


def _check_distributed(ranks: dict | None, nproc_per_node: int | None, output: str, counters: str) -> None:
    """What a distributed run cannot do, in one sentence before anything runs."""
    if (ranks is not None or nproc_per_node is not None) and counters != "none":
        raise UsageError("--counters runs the program again under ncu, in one process: profile one rank's work "
                         "without torchrun for counters.")
    if (ranks is not None or nproc_per_node is not None) and output == STDOUT:
        raise UsageError("-o - under torchrun would mix the ranks' profiles on one standard output: give a file "
                         "name (each rank writes its own).")


class ProfileSteps(click.ParamType):
    """auto, all, or a positive whole number."""

    name = "auto|all|N"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = str(value).strip().lower()
        if text in ("auto", "all") or (text.isdigit() and int(text) >= 1):
            return text
        self.fail(f"{value!r} is not auto, all or a positive number of iterations", param, ctx)


class IterationsMode(click.ParamType):
    """auto, none, or a positive whole number."""

    name = "auto|none|N"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = str(value).strip().lower()
        if text in ("auto", "none") or (text.isdigit() and int(text) >= 1):
            return text
        self.fail(f"{value!r} is not auto, none or a positive number of iterations", param, ctx)


@click.command("profile", cls=ScriptCommand, context_settings={"ignore_unknown_options": True})
@click.argument("target")
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED)
@click.option("-o", "--output", default=DEFAULT_PROFILE_PATH, show_default=True,
              help="profile file to write ('-': the profile JSON on standard output, no table)")
@click.option("--force", is_flag=True, help="replace an -o file that is not a rooflinectl profile, or an existing --ncu-report file "
                   "(never a source file)")
@click.option("--warmup", type=click.IntRange(min=0), default=3, show_default=True,
              help="unprofiled calls first (FILE.py:FUNCTION only)")
@click.option("--iters", type=click.IntRange(min=1), default=10, show_default=True,
              help="profiled calls (FILE.py:FUNCTION only)")
@click.option("--device", type=click.Choice(["auto", "cuda", "cpu"]), default="auto", show_default=True,
              help="which activity to profile: CUDA kernels, or CPU ops on a machine without a GPU")
@click.option("--iterations", "iterations_mode", type=IterationsMode(), default="auto", show_default=True,
              help="script mode without a region: auto (find the loop's iterations, count the steady state, "
                   "keep setup apart), none (count the whole run), or N (count the last N iterations found)")
@click.option("--profile-steps", type=ProfileSteps(), default="auto", show_default=True,
              help="script mode: profile the setup and the first N iterations (optimizer steps, else calls of the "
                   "top-level module, else calls of the first compiled graph), then let the script run on without "
                   "the profiler and report the later iterations' un-profiled step time (CUDA events); auto: 5 "
                   "(1-2 warm-up, 3 steady); all: profile the whole run")
@top_options(15)
@click.option("--save-trace", "trace_path", type=click.Path(dir_okay=False), default=None,
              help="also write the Chrome/Perfetto trace, each kernel annotated with its FLOPs, bytes, roof and "
                   "efficiency (.json or .json.gz; opens in Perfetto, TensorBoard, HTA)")
@click.option("--save-capture", "capture_path", type=click.Path(dir_okay=False), default=None,
              help="also write rooflinectl's raw events (gzipped JSON) for re-analysis and test data")
@click.option("-q", "--quiet", is_flag=True, help="write the profile, print no table")
@click.option("--counters", type=click.Choice(COUNTER_MODES), default="none", show_default=True,
              help="ncu: run the program again under Nsight Compute and add measured FLOPs and DRAM/L2/L1 bytes "
                   "(exit 3 or 4 when it cannot); auto: the same, or say why not and go on")
@click.option("--ncu-samples", "samples", type=click.IntRange(min=0), default=1, show_default=True,
              help="counters: launches measured per sampling class: same kernel, launch configuration, op, "
                   "shapes (0: every launch, as plain ncu does)")
@click.option("--ncu-launch-count", "launch_count", type=click.IntRange(min=1), default=1000, show_default=True,
              help="counters: at most this many launches measured (the warm run, one pass each: 4 times as many)")
@click.option("--ncu-launch-skip", "launch_skip", type=click.IntRange(min=0), default=0, show_default=True,
              help="counters: measure no launch among the first N counted ones (e.g. a cold first iteration)")
@click.option("--ncu-timeout", type=FiniteFloatRange(min=1), default=900, show_default=True,
              help="counters: seconds before the ncu run is stopped")
@click.option("--ncu-warm/--no-ncu-warm", "ncu_warm", default=True, show_default=True,
              help="counters: run ncu once more with the caches as the program leaves them (DRAM bytes, one pass per "
                   "launch), so the counters decide each group's memory level (docs/counters.md)")
@click.option("--ncu", "ncu_path", default=None, help="counters: the ncu executable (default: PATH, $CUDA_HOME/bin)")
@click.option("--ncu-report", type=click.Path(dir_okay=False), default=None,
              help="counters: also keep ncu's own report for Nsight Compute's UI (.ncu-rep is appended when "
                   "missing; an existing file is replaced only with --force)")
@click.option("--nproc-per-node", type=click.IntRange(min=1), default=None,
              help="run the script on N processes of this machine through torch.distributed.run (torchrun), "
                   "profile each rank, and show them together")
@click.option("--report", "report_path", default=None, metavar="FILE.html", callback=report_path_option,
              help="also write the interactive HTML report of the profile (as `rooflinectl report` does)")
@click.option("--source/--no-source", "source", default=True, show_default=True,
              help="name the user's source line of each kernel (file:line; docs/source-lines.md)")
@click.pass_context
def command(ctx: click.Context, target: str, script_args: tuple[str, ...], output: str, force: bool, warmup: int,
            iters: int, device: str, iterations_mode: str, top: int, trace_path: str | None, capture_path: str | None,
            quiet: bool, counters: str, samples: int, launch_count: int, launch_skip: int, ncu_timeout: float,
            ncu_path: str | None, ncu_report: str | None, ncu_warm: bool, nproc_per_node: int | None,
            profile_steps: str, report_path: str | None, source: bool) -> None:
    """Run a script or FILE.py:FUNCTION under the profiler; top kernels.

    Arguments after the script go to it; an unknown option before the script or before `--` is an error. A failing script still gets its
    partial profile written, and rooflinectl exits with the script's own exit code. With --counters the program runs a
    second time, under Nsight Compute, after the profile is written.
    """
    from rooflinectl.capture.run.runner import split_target
    from rooflinectl.ceilings import resolve_device_kind
    from rooflinectl.cli.script_args import check_target, forwarded_lookalike
    from rooflinectl.profiling import ProfilePipeline, ProfileRequest, steps_for
    from rooflinectl.profiling_counters import CounterOptions

    check_target(target, ctx.command, ctx)  # `--wramup 3 script.py`: a typo, not the script (cli/script_args.py)
    lookalike = forwarded_lookalike(script_args, ctx.command, ctx)
    if lookalike:
        click.echo(f"rooflinectl: {lookalike}", err=True)
    path, function = split_target(target)
    if function is not None and script_args:
        raise UsageError(f"{target} is a function target: it takes no script arguments ({' '.join(script_args)}).")
    ranks = rank_info()
    _check_distributed(ranks, nproc_per_node, output, counters)
    profile_steps = steps_for(profile_steps, function is not None, counters)
    if nproc_per_node is not None:
        from rooflinectl.cli.launch import launch_and_show

        resolve_device_kind(device)  # --device cuda without CUDA: one sentence, exit 3, before any process starts
        launch_and_show(ctx, nproc_per_node, target, function, list(script_args), output, device=device, top=top,
                        save_trace=trace_path, quiet=quiet, iterations_mode=iterations_mode,
                        profile_steps=profile_steps, source=source)
        return
    outputs = _checked_outputs(output, ranks, path, force, trace_path, capture_path, ncu_report, counters)
    command_line = ("rooflinectl", *sys.argv[1:])
    pipeline = ProfilePipeline(ProfileRequest(  # --device cuda without CUDA: one sentence, exit 3
        target=target, script_args=tuple(script_args), device=device, warmup=warmup, iters=iters,
        iterations_mode=iterations_mode, profile_steps=profile_steps, keep_trace=outputs.trace is not None,
        counters=CounterOptions(counters, samples, launch_count, launch_skip, ncu_timeout, ncu_path,
                                outputs.ncu_report, ncu_warm),
        command=command_line))
    _profile(ctx, pipeline, outputs, ranks, quiet=quiet, top=top, report_path=report_path, source=source)


@dataclass
class _Outputs:
    """Where `profile` writes, each path checked (and made absolute) before the script runs."""

    shown: str  # -o as given, with the rank in it (a distributed job's rank files)
    pattern: str  # -o as given ({rank} not filled in)
    profile: Path | None  # None: standard output
    capture: Path | None
    trace: Path | None
    ncu_report: str | None

    @property
    def to_stdout(self) -> bool:
        return self.shown == STDOUT


def _checked_outputs(output: str, ranks: dict | None, script: Path, force: bool, trace_path: str | None,
                     capture_path: str | None, ncu_report: str | None, counters: str) -> _Outputs:
    """The output paths, each rank's own in a distributed job, checked and made absolute before the
    script runs (it may chdir, or fail late)."""
    shown = rank_output_path(output, ranks)
    trace_path = rank_output_path(trace_path, ranks) if trace_path else None
    capture_path = rank_output_path(capture_path, ranks) if capture_path else None
    profile = None if shown == STDOUT else checked_output(shown, what="profile", script=script, force=force,
                                                          ours=is_profile)
    capture = checked_output(capture_path, what="capture", ours=is_capture, script=script,
                             force=force, others=[profile]) if capture_path else None
    trace = checked_output(trace_path, what="trace", ours=holds_marker(TRACE_MARKER), script=script,
                           force=force, others=[profile, capture]) if trace_path else None
    if ncu_report is not None:
        if counters == "none":
            raise UsageError("--ncu-report keeps Nsight Compute's report of the counters run: give --counters ncu "
                             "(or auto) with it.")
        others = [t for t in (profile, capture, trace) if t is not None]
        ncu_report = str(checked_ncu_report(ncu_report, script=script, others=others, force=force))
    return _Outputs(shown, output, profile, capture, trace, ncu_report)


def _profile(ctx: click.Context, pipeline: ProfilePipeline, outputs: _Outputs, ranks: dict | None, *, quiet: bool,
             top: int, report_path: str | None, source: bool = True) -> None:
    """Run the pipeline's steps around what the command writes and says; exits with the script's
    code, else the counters' or the writing's status."""
    from rooflinectl.cli.profile_output import ProfileWriter

    writer = ProfileWriter(outputs.profile, outputs.shown, list(pipeline.request.command),
                           pipeline.request.iterations_mode, builder=pipeline.build_capture)
    speaks = ranks is None or ranks["rank"] == 0  # in a distributed job rank 0 speaks for the ranks
    # notices (the script's own profiler taken over) go to stderr unless -q, from rank 0 only
    outcome, result, status, message = _run_and_write(pipeline, writer, outputs, quiet=quiet or ranks is not None,
                                                      notices=not quiet and speaks, source=source)
    if result is None:  # nothing recorded: said, and no profile written
        ctx.exit(outcome.exit_code)
        return
    counters = pipeline.request.counters.mode
    if counters != "none":
        result = pipeline.add_counters(result, say=None if quiet else lambda text: click.echo(text, err=True))
        status, message = writer.save(result.data, completed=result.outcome.completed)
    _tell(result, outputs, ranks, status, message, quiet=quiet, speaks=speaks, top=top, report_path=report_path,
          counted=counters != "none")
    if result.outcome.exit_code:
        ctx.exit(result.outcome.exit_code)
    if result.counters_problem is not None:
        if counters == "ncu":
            raise result.counters_problem
        click.echo(f"rooflinectl: counters not read: {str(result.counters_problem).rstrip('.')}; the profile holds "
                   "analytic costs only.", err=True)
    ctx.exit(status)


def _run_and_write(pipeline: ProfilePipeline, writer: ProfileWriter, outputs: _Outputs,
                   quiet: bool, notices: bool, source: bool = True) -> tuple[RunOutcome, ProfileResult | None, int, str]:
    """Run under a status line (not for -q, -o - or a rank), then write the profile (before
    anything can fail), the capture and the trace. (outcome, result, status, message); result
    None: nothing was recorded (said, and no profile written)."""
    from rooflinectl.capture.progress import report
    from rooflinectl.capture.run.source_lines import source_lines_enabled
    from rooflinectl.cli.script_stdout import script_stdout_to_stderr
    from rooflinectl.cli.status import status_line
    from rooflinectl.profiling import ProfileResult

    counters = pipeline.request.counters.mode
    with status_line(enabled=not quiet and not outputs.to_stdout, notices=notices) as line:
        line.workload(f"profiling {pipeline.request.target} ({pipeline.device_kind}); the table follows when it ends")
        with script_stdout_to_stderr() if outputs.to_stdout else nullcontext() as real_stdout:
            writer.stdout = real_stdout  # a hard exit in the run still writes the JSON to standard output
            with source_lines_enabled(source):
                outcome = pipeline.run(on_hard_exit=writer.save_on_hard_exit)
        writer.stdout = None
        built = writer.build(outcome.capture, completed=outcome.completed, exit_code=outcome.exit_code)
        if built is None:
            return outcome, None, 0, ""
        result = ProfileResult(outcome, *built)
        status, message = 0, ""
        if not (outputs.to_stdout and counters != "none"):  # standard output gets one profile: the final one
            report(f"writing {outputs.shown}")
            status, message = writer.save(result.data, completed=outcome.completed)  # saved before anything can fail
        try:  # the profile is saved: a failure now still says where it is
            if outputs.capture is not None:
                report(f"writing {outputs.capture}")
                pipeline.save_capture(result, outputs.capture)
            if outputs.trace is not None:
                report(f"writing {outputs.trace}")
                pipeline.save_trace(result, outputs.trace)
        except OutputWriteError as exc:
            raise OutputWriteError(f"{exc} ({message or 'the profile was written'})") from None
    return outcome, result, status, message


def _tell(result: ProfileResult, outputs: _Outputs, ranks: dict | None, status: int, message: str, *, quiet: bool,
          speaks: bool, top: int, report_path: str | None, counted: bool) -> None:
    """The table, the counters' line, where the profile went, the report, and the ranks' files."""
    from rooflinectl.analysis.regroup import regroup
    from rooflinectl.cli.common import console, terminal_width
    from rooflinectl.cli.profile_counters import counters_line
    from rooflinectl.outputs.table import render_profile

    data = result.data
    assert data is not None
    if not quiet and not outputs.to_stdout and speaks:
        width = terminal_width()
        console(width).print(render_profile(data, regroup(data.kernels, "kernel", data.ceilings), top=top,
                                            width=width))
        if counted and result.counters_problem is None:
            click.echo(counters_line(data.summary), err=True)
    if speaks or status:
        click.echo(message, err=True)
    if report_path is not None and speaks:
        click.echo(write_profile_report(data, report_path, Path(outputs.shown).name), err=True)
    if ranks is not None and speaks and not quiet:
        files = rank_pattern(outputs.pattern, ranks)
        click.echo(f"each of the {ranks['world_size']} ranks writes its own profile: {files} (on each rank's host); "
                   f"read them together: rooflinectl show '{files}'", err=True)
