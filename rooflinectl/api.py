"""The Python API: `rooflinectl.profile(fn, *args)` returns a Profile for notebooks and tests;
`rooflinectl.trace_handler(...)` builds one inside a user's own torch.profiler schedule."""

from __future__ import annotations

import os
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from rooflinectl.capture.runner import profile_calls
from rooflinectl.ceilings import resolve_device_kind
from rooflinectl.errors import RooflineError
from rooflinectl.outputs.profile_file import load_profile, save_profile
from rooflinectl.pipeline import profile_data
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

    def plot(self, **options: Any) -> Any:
        """The roofline chart as a matplotlib Figure (shown inline in Jupyter)."""
        from rooflinectl.outputs.plot import plot_profile

        return plot_profile(self.data, **options)

    def advise(self, **options: Any) -> Any:
        """The findings of the advice rules, most time saved first."""
        from rooflinectl.analysis.advice import advise

        return advise(self.data, **options)

    def _repr_html_(self) -> str:
        return self.kernels.head(15).to_html()


def profile(fn: Callable[..., Any], *args: Any, warmup: int = 3, iters: int = 10, device: str = "auto",
            **kwargs: Any) -> Profile:
    """Call fn(*args, **kwargs) `warmup` times, then profile `iters` calls."""
    device_kind = resolve_device_kind(device)
    capture = profile_calls(fn, args, kwargs, warmup=warmup, iters=iters, device_kind=device_kind)
    name = getattr(fn, "__qualname__", repr(fn))
    return Profile(profile_data(capture, command=[f"rooflinectl.profile({name})"], completed=True, exit_code=0))


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
        from rooflinectl.cli.analyse_cmd import profile_of_trace

        data, _ = profile_of_trace(trace, command=["rooflinectl.trace_handler"], iterations_mode=self.iterations)
        return Profile(data)


def trace_handler(target: str | os.PathLike[str] | Callable[[Profile], Any], *, iterations: str = "auto",
                  trace: str | os.PathLike[str] | None = None) -> TraceHandler:
    """`torch.profiler.profile(schedule=..., on_trace_ready=rooflinectl.trace_handler("p.json"))`:
    the same profile as `rooflinectl analyse` of the cycle's trace. `iterations` is analyse's
    --iterations (auto: the ProfilerStep markers the schedule records); `trace` keeps the trace."""
    return TraceHandler(target, iterations=iterations, trace=trace)
