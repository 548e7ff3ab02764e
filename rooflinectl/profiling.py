"""One profiling pipeline, what `rooflinectl profile` and `rooflinectl.profile()` both run: the
target (a script with its arguments, FILE.py:FUNCTION, or a Python callable) run under the
profiler (capture), its profile built (pipeline.build_profile), the annotated trace and the raw
capture saved when asked, and the counters tier (ncu) added when asked.

The click command parses options, checks output paths, shows a status line and renders; the
API returns the result. Neither runs any step of its own, so the same target and options give
the same profile either way (tests/test_profiling_pipeline.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from rooflinectl.capture.run.runner import (
    RunOutcome,
    SaveCapture,
    profile_calls,
    run_function,
    run_script,
    split_target,
)
from rooflinectl.capture.run.session import Capture, save_capture
from rooflinectl.ceilings import resolve_device_kind
from rooflinectl.ceilings.model import Ceilings
from rooflinectl.errors import RooflineError, UsageError
from rooflinectl.pipeline import build_profile
from rooflinectl.profile_model import ProfileData
from rooflinectl.profiling_counters import CounterOptions, Target, counters_phase


@dataclass(frozen=True)
class ProfileRequest:
    """What to profile and how (the options of `rooflinectl profile`, with its defaults)."""

    target: str | None = None  # a script, or FILE.py:FUNCTION; None: `fn` below
    script_args: tuple[str, ...] = ()
    fn: Callable[..., Any] | None = None  # the API's callable, with its arguments
    fn_args: tuple[Any, ...] = ()
    fn_kwargs: dict[str, Any] = field(default_factory=dict)
    device: str = "auto"
    warmup: int = 3  # function mode: calls first (timed without the profiler, then profiled, not counted)
    iters: int = 10  # function mode: calls counted
    iterations_mode: str = "auto"  # --iterations: auto, none, N
    profile_steps: str = "auto"  # --profile-steps: auto, all, N (scripts)
    counters: CounterOptions = field(default_factory=CounterOptions)
    keep_trace: bool = False  # keep torch.profiler's trace for save_trace
    command: tuple[str, ...] = ()  # what the profile's metadata records as the command
    ceilings: Ceilings | None = None  # the roofs to hold the kernels to (None: this device's current ones)


def steps_for(profile_steps: str, function: bool, counters: str) -> str:
    """The --profile-steps value to run with: auto becomes all where sampling cannot apply
    (function mode times its calls itself; the counters run measures the launches of the whole
    run); an explicit N there is refused in one sentence."""
    text = str(profile_steps).strip().lower()
    if text in ("auto", "all"):
        return "all" if function or counters != "none" else text
    if function:
        raise UsageError("--profile-steps applies to scripts: a FILE.py:FUNCTION target is profiled for --iters calls.")
    if counters != "none":
        raise UsageError("--counters measures the launches the whole profile recorded: profile without "
                         "--profile-steps N (auto or all) to add counters.")
    return text


@dataclass
class ProfileResult:
    """The run and its profile (data None: nothing was recorded)."""

    outcome: RunOutcome
    data: ProfileData | None = None
    launches: pd.DataFrame | None = None  # every attributed launch (pipeline.build_profile)
    counters_problem: RooflineError | None = None


class ProfilePipeline:
    """The steps of one profile, in order: run, build, save_trace / save_capture, counters;
    `profile()` runs them all (the API), the CLI calls them one by one around its output."""

    def __init__(self, request: ProfileRequest) -> None:
        self.request = request
        self.path: Path | None = None
        self.function: str | None = None
        if request.target is not None:
            self.path, self.function = split_target(request.target)
            if self.function is not None and request.script_args:
                raise UsageError(f"{request.target} is a function target: it takes no script arguments "
                                 f"({' '.join(request.script_args)}).")
        elif request.fn is None:
            raise UsageError("Nothing to profile: give a script, FILE.py:FUNCTION or a callable.")
        elif request.counters.mode != "none":
            raise UsageError("Counters run the program again under ncu: profile a script or FILE.py:FUNCTION "
                             "(a callable in this process cannot be run again).")
        self.steps = steps_for(request.profile_steps, self.function is not None or request.fn is not None,
                               request.counters.mode)
        self.device_kind = resolve_device_kind(request.device)  # --device cuda without CUDA: one sentence

    def run(self, on_hard_exit: SaveCapture | None = None) -> RunOutcome:
        """Run the target under the profiler (script: sampled by default, capture/run/step_limit.py)."""
        r = self.request
        if r.fn is not None:
            capture = profile_calls(r.fn, r.fn_args, r.fn_kwargs, warmup=r.warmup, iters=r.iters,
                                    device_kind=self.device_kind, keep_trace_file=r.keep_trace)
            return RunOutcome(capture, 0, True)
        assert self.path is not None
        if self.function is None:
            return run_script(self.path, list(r.script_args), self.device_kind, on_hard_exit=on_hard_exit,
                              profile_steps=None if self.steps == "all" else self.steps, keep_trace_file=r.keep_trace)
        return run_function(self.path, self.function, warmup=r.warmup, iters=r.iters, device_kind=self.device_kind,
                            on_hard_exit=on_hard_exit, keep_trace_file=r.keep_trace)

    def build_capture(self, capture: Capture, *, completed: bool, exit_code: int) -> tuple[ProfileData, pd.DataFrame]:
        """The profile of a finished capture and its attributed launches (also of a cut-short run)."""
        return build_profile(capture, command=list(self.request.command), completed=completed, exit_code=exit_code,
                             ceilings=self.request.ceilings, iterations_mode=self.request.iterations_mode)

    def build(self, outcome: RunOutcome) -> ProfileResult:
        """The profile of the run (data None when it recorded nothing)."""
        if outcome.capture.trace is None:
            return ProfileResult(outcome)
        data, launches = self.build_capture(outcome.capture, completed=outcome.completed, exit_code=outcome.exit_code)
        return ProfileResult(outcome, data, launches)

    def save_trace(self, result: ProfileResult, target: Path) -> None:
        """torch.profiler's trace of the run with our numbers on each counted kernel."""
        from rooflinectl.outputs.chrome_trace import annotate, write_trace

        capture = result.outcome.capture
        if capture.chrome_trace_path is None or capture.trace is None or result.data is None:
            return
        with open(capture.chrome_trace_path, encoding="utf-8") as handle:
            trace = json.load(handle)
        annotate(trace, result.launches, result.data)
        write_trace(trace, target)

    def save_capture(self, result: ProfileResult, target: Path) -> None:
        save_capture(result.outcome.capture, str(target))

    def add_counters(self, result: ProfileResult, *, say: Callable[[str], None] | None = None) -> ProfileResult:
        """The counters tier when asked (never raises: a problem is kept in the result); its
        progress goes to say (None: nowhere)."""
        r = self.request
        if r.counters.mode == "none" or result.data is None or result.launches is None:
            return result
        assert self.path is not None  # refused for a callable when the pipeline was made
        where = Target(self.path, self.function, tuple(r.script_args), r.warmup, r.iters)
        result.data, result.counters_problem = counters_phase(result.data, result.launches, result.outcome.capture,
                                                              where, r.counters, completed=result.outcome.completed,
                                                              say=say)
        return result

    def profile(self, save_trace: Path | None = None, save_capture_to: Path | None = None,
                say: Callable[[str], None] | None = None) -> ProfileResult:
        """Every step: run, build, save what was asked, counters."""
        result = self.build(self.run())
        if result.data is not None:
            if save_capture_to is not None:
                self.save_capture(result, save_capture_to)
            if save_trace is not None:
                self.save_trace(result, save_trace)
            result = self.add_counters(result, say=say)
        return result
