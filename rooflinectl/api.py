"""The Python API: `rooflinectl.profile(fn, *args)` returns a Profile for notebooks and tests;
`rooflinectl.trace_handler(...)` builds one inside a user's own torch.profiler schedule."""

from __future__ import annotations

import inspect
import os
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from rooflinectl.ceilings.model import Ceilings
from rooflinectl.errors import RooflineError
from rooflinectl.outputs.profile_file import load_profile, save_profile
from rooflinectl.profile_model import ProfileData
from rooflinectl.units import percent, seconds


@dataclass
class Profile:
    """A profile in memory: `.kernels` is the kernel table (schema.KERNEL_COLUMNS)."""

    data: ProfileData

    def __repr__(self) -> str:
        """One line a notebook shows: device, kernel time (and over how many iterations), the share
        of it whose cost is known, and the top kernel group (not the whole table)."""
        summary, meta = self.data.summary, self.data.metadata
        device = meta.get("device_name") or meta.get("device_kind") or "unknown device"
        iterations = int(summary.get("iterations") or meta.get("iterations") or 1)
        text = (f"<rooflinectl.Profile {device}: {seconds(summary.get('total_kernel_time_s'))} kernel time over "
                f"{iterations} iteration{'s' if iterations != 1 else ''}, {len(self.kernels)} groups, "
                f"{percent(summary.get('known_cost_time_share'))} of it of known cost")
        if len(self.kernels):
            top = self.kernels.sort_values("time_s", ascending=False).iloc[0]
            name = str(top.get("op") or top.get("kernel"))
            text += f"; top: {name[:40]} {percent(top.get('time_share'))} ({top.get('bound') or 'unknown'}-bound)"
        return text + ">"

    @property
    def kernels(self) -> pd.DataFrame:
        """One row per kernel group, largest time first (columns: schema.KERNEL_COLUMNS)."""
        return self.data.kernels

    @property
    def summary(self) -> dict[str, Any]:
        return self.data.summary

    @property
    def metadata(self) -> dict[str, Any]:
        return self.data.metadata

    def save(self, path: str) -> None:
        """Write the profile file (JSON, data only, written atomically: no half file on a crash)."""
        save_profile(self.data, path)

    def plot(self, *, clocks: bool = False, **options: Any) -> Any:
        """The roofline chart as a matplotlib Figure (shown inline in Jupyter); clocks=True adds
        the strip of SM clock and power over the run."""
        from rooflinectl.analysis.charts import chart_model
        from rooflinectl.outputs.plot import plot_profile

        return plot_profile(self.data, model=chart_model(self.data, clocks=clocks), **options)

    def advise(self, **options: Any) -> Any:
        """The findings of the advice rules, most time saved first."""
        from rooflinectl.analysis.advice import advise

        return advise(self.data, **options)

    def step_times(self) -> dict[str, float | None]:
        """The step (a script's iteration, or one call of a function) under the profiler and
        without it: "profiled_s" (median iteration, else window / iterations), "unprofiled_s"
        (median of the steps or calls timed without the profiler; None when none were)."""
        s = self.summary
        profiled = s.get("iteration_time_s")
        if profiled is None and s.get("window_s") is not None and s.get("iterations"):
            profiled = float(s["window_s"]) / float(s["iterations"])
        return {"profiled_s": profiled, "unprofiled_s": s.get("unprofiled_step_time_s")}

    def report(self, path: str, force: bool = False) -> str:
        """Write the interactive HTML report (one self-contained file: `rooflinectl report`);
        an existing HTML file rooflinectl did not write is replaced only with force=True."""
        from rooflinectl.html_report import write_profile_report

        return write_profile_report(self.data, path, force=force)

    def _repr_html_(self) -> str:
        """Jupyter's view: the summary, the top rows and the roofline as an inline PNG (no script,
        so an untrusted notebook shows it too; every name escaped)."""
        from rooflinectl.outputs.plot import plain_names
        from rooflinectl.outputs.report_html import notebook_html
        from rooflinectl.outputs.table import summary_text

        columns = [c for c in ("kernel", "op", "module", "calls", "time_s", "flops", "bytes", "intensity", "efficiency",
                               "bound", "precision", "time_share") if c in self.kernels.columns]
        table = plain_names(self.kernels[columns].head(15)).to_html(escape=True, index=False, float_format=lambda v: f"{v:.4g}")
        try:
            figure = self.plot()
        except RooflineError:  # no roofline to draw (no DRAM roof): the summary and table still show
            figure = None
        return notebook_html(summary_text(self.data).plain.splitlines(), table, figure)


def profile(fn: Callable[..., Any] | str, *args: Any, warmup: int = 3, iters: int = 10, device: str = "auto",
            script_args: tuple[str, ...] | list[str] = (), profile_steps: str = "auto", iterations: str = "auto",
            save_trace: str | None = None, save_capture: str | None = None, counters: str = "none",
            ceilings: Ceilings | None = None, fn_kwargs: dict[str, Any] | None = None, **kwargs: Any) -> Profile:
    """Profile fn(*args, **kwargs, **fn_kwargs): `warmup` calls, then `iters` calls timed without the profiler
    and `iters` profiled (Profile.step_times() gives both). fn may also be a target as
    `rooflinectl profile` takes it: a script (run with script_args, sampled as --profile-steps
    says) or "FILE.py:FUNCTION". The same pipeline as the CLI (rooflinectl/profiling.py):
    iterations, save_trace (the annotated Chrome trace), save_capture and counters ("ncu",
    "auto"; file targets only) mean what the CLI's options mean. Held to `ceilings` when given
    (the pytest plugin passes the roofs it measured once per session), else to this device's
    current ones.

    The options above are rooflinectl's, by keyword only; every other keyword goes to fn. A
    keyword of fn's own with an option's name (fn(x, device=...)) goes in fn_kwargs:
    `profile(fn, x, fn_kwargs={"device": "cuda"})`; passing it bare is said in a warning."""
    from rooflinectl.profiling import ProfilePipeline, ProfileRequest
    from rooflinectl.profiling_counters import CounterOptions

    kwargs = _function_kwargs(fn, kwargs, fn_kwargs, _passed_options(locals()))
    is_target = isinstance(fn, str)
    name = fn if is_target else getattr(fn, "__qualname__", repr(fn))
    request = ProfileRequest(target=fn if is_target else None, script_args=tuple(script_args),
                             fn=None if is_target else fn, fn_args=args, fn_kwargs=kwargs, device=device,
                             warmup=warmup, iters=iters, iterations_mode=str(iterations), profile_steps=str(profile_steps),
                             counters=CounterOptions(counters), keep_trace=save_trace is not None,
                             command=(f"rooflinectl.profile({name})",), ceilings=ceilings)
    result = ProfilePipeline(request).profile(save_trace=Path(save_trace) if save_trace else None,
                                              save_capture_to=Path(save_capture) if save_capture else None)
    if result.data is None:
        raise RooflineError(f"Nothing was recorded: {name} did not run (exit code {result.outcome.exit_code}).")
    if result.counters_problem is not None and counters == "ncu":
        raise result.counters_problem
    return Profile(result.data)


OPTION_DEFAULTS = {"warmup": 3, "iters": 10, "device": "auto", "script_args": (), "profile_steps": "auto",
                   "iterations": "auto", "save_trace": None, "save_capture": None, "counters": "none", "ceilings": None}


def _passed_options(scope: dict[str, Any]) -> list[str]:
    """The options of profile() given a value other than their default."""
    return [name for name, default in OPTION_DEFAULTS.items() if scope.get(name) is not default
            and scope.get(name) != default]


def _function_kwargs(fn: Any, kwargs: dict[str, Any], fn_kwargs: dict[str, Any] | None,
                     passed: list[str]) -> dict[str, Any]:
    """fn's keywords: the bare ones and fn_kwargs (a name in both is refused); a warning when an
    option given to rooflinectl is also a parameter of fn (it went to rooflinectl, not to fn)."""
    both = sorted(set(kwargs) & set(fn_kwargs or {}))
    if both:
        raise TypeError(f"rooflinectl.profile: {', '.join(both)} given both bare and in fn_kwargs")
    if callable(fn) and passed:
        try:
            params = inspect.signature(fn).parameters
        except (TypeError, ValueError):
            params = {}
        shadowed = [name for name in passed if name in params and name not in (fn_kwargs or {})]
        if shadowed:
            names = ", ".join(shadowed)
            warnings.warn(f"rooflinectl.profile: {names} went to rooflinectl, not to {getattr(fn, '__name__', 'fn')}, "
                          f"which takes {'it' if len(shadowed) == 1 else 'them'} too: pass "
                          f"fn_kwargs={{{', '.join(repr(n) + ': ...' for n in shadowed)}}} for the function's",
                          UserWarning, stacklevel=3)
    return {**kwargs, **(fn_kwargs or {})}


def load(path: str) -> Profile:
    """Load a profile file (data only: loading never runs code)."""
    return Profile(load_profile(path))


class TraceHandler:
    """A torch.profiler `on_trace_ready` callback: each ready trace becomes a Profile, by the path
    `rooflinectl analyse` takes (the trace is exported to a file and analysed).

    `target` is a profile file to write (each cycle replaces it, atomically) or a function called
    with the Profile; `trace` keeps the Chrome trace there too (torch.profiler exports a cycle's
    trace only once, so the handler does it); `.profiles` keeps every cycle's Profile in order.
    A trace rooflinectl cannot read is a warning, never an exception in the user's training loop.
    """

    def __init__(self, target: str | os.PathLike[str] | Callable[[Profile], Any], *, iterations: str = "auto",
                 trace: str | os.PathLike[str] | None = None) -> None:
        self.target = target
        self.iterations = iterations
        self.trace = trace
        self.profiles: list[Profile] = []

    def __call__(self, prof: Any) -> None:
        with tempfile.TemporaryDirectory(prefix="rooflinectl-") as folder:
            trace = Path(self.trace) if self.trace is not None else Path(folder) / "trace.json"
            prof.export_chrome_trace(str(trace))
            try:
                result = self._analysed(trace)
            except RooflineError as exc:
                warnings.warn(f"rooflinectl.trace_handler: {exc}", RuntimeWarning, stacklevel=2)
                return
        self.profiles.append(result)
        if callable(self.target):
            self.target(result)
        else:
            result.save(os.fspath(self.target))

    def _analysed(self, trace: Path) -> Profile:
        from rooflinectl.saved_trace import capture_of_chrome_trace, profile_of_capture

        data, _ = profile_of_capture(capture_of_chrome_trace(trace), command=["rooflinectl.trace_handler"],
                                     iterations_mode=self.iterations)
        return Profile(data)


def trace_handler(target: str | os.PathLike[str] | Callable[[Profile], Any], *, iterations: str = "auto",
                  trace: str | os.PathLike[str] | None = None) -> TraceHandler:
    """`torch.profiler.profile(schedule=..., on_trace_ready=rooflinectl.trace_handler("p.json"))`:
    the same profile as `rooflinectl analyse` of the cycle's trace. `iterations` is analyse's
    --iterations (auto: the ProfilerStep markers the schedule records); `trace` keeps the trace."""
    return TraceHandler(target, iterations=iterations, trace=trace)
