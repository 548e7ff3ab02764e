"""The Python API: `rooflinectl.profile(fn, *args)` returns a Profile for notebooks and tests."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from rooflinectl.capture.runner import profile_calls
from rooflinectl.ceilings import resolve_device_kind
from rooflinectl.errors import RooflineError
from rooflinectl.outputs.profile_file import load_profile, save_profile
from rooflinectl.pipeline import profile_data
from rooflinectl.profile_model import ProfileData


@dataclass
class Profile:
    """A profile in memory: `.kernels` is the kernel table (schema.KERNEL_COLUMNS)."""

    data: ProfileData

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

    def report(self, path: str, force: bool = False) -> str:
        """Write the interactive HTML report (one self-contained file: `rooflinectl report`);
        an existing HTML file rooflinectl did not write is replaced only with force=True."""
        from rooflinectl.cli.report_cmd import write_profile_report

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
