"""The figures a roofline test asserts on: a profile of the function through the public API
(rooflinectl.profile), per call of the function, plus the call timed without the profiler.

Definitions (docs/pytest-plugin.md):
- efficiency: the function's kernels' roof time over their time, sum(roof_time_s) / sum(time_s)
  over the rows whose cost is known: the time-weighted mean of the rows' efficiencies (NaN when no
  row's cost is known, so `>=` fails). A row above its roof is a bug in the numbers (the roof or
  the count), never a success: reading the efficiency of a call that has one, or of that row,
  raises AboveRoof naming the kernel and its figure (an AssertionError: the test fails saying so).
- bound: the bound that holds the most kernel time; kernel: the row that takes the most time.
- bytes, flops: the kernel table's minimum traffic and FLOPs of one call (each op's inputs read
  once, outputs written once; a chain of unfused ops moves its intermediates too).
- min_bytes: the analytic minimum of the whole call, as if it were one fused kernel: the
  tensors passed in (and an nn.Module's parameters and buffers) read once, the tensors returned
  written once, a storage counted once. Tensors the function captures from outside are not seen.
- time_s: the kernels' time per call, profiled; unprofiled_time_s: the median of `iters` calls
  timed without the profiler after the profiled ones and one untimed call (the API's own timing,
  capture/run/runner.time_calls: CUDA events around each call on a GPU, the host clock on a CPU).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import torch

from rooflinectl.api import Profile, profile
from rooflinectl.attribution.transfers import memory_level
from rooflinectl.capture.run.runner import time_calls
from rooflinectl.ceilings.model import Ceilings


class KernelNotFound(LookupError):
    """`r.kernel(name)` matched no row, or several: the message lists the candidates."""


class AboveRoof(AssertionError):
    """An efficiency was read where a kernel ran above its roof: the numbers are wrong, no gate passes."""


def _above_text(rows: pd.DataFrame) -> str:
    return "; ".join(f"{r.kernel} ran at {r.efficiency:.0%} of its roof ({r.unit}.{r.precision}, {r.bound}-bound)"
                     for r in rows.itertuples())


ABOVE_ROOF_HINT = "the roof or the count is wrong, so no efficiency can be asserted (`rooflinectl ceilings` shows the roofs)"


def _si(value: float, unit: str) -> str:
    if value is None or not math.isfinite(value):
        return f"? {unit}"
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def _duration(seconds: float | None) -> str:
    if seconds is None or not math.isfinite(seconds):
        return "?"
    return f"{seconds * 1e3:.3g} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.3g} us"


@dataclass(frozen=True)
class KernelFigures:
    """One row of the kernel table, per call of the profiled function."""

    kernel: str
    op: str
    raw_efficiency: float  # the table's figure, also when the row is above its roof
    bound: str
    time_s: float
    flops: float
    bytes: float
    launches: float  # launches of this row per call
    roof: str  # the roof it is held to: unit.precision, or the memory level for a memory-bound row
    above_roof: bool
    row: pd.Series = field(repr=False, compare=False)

    @property
    def efficiency(self) -> float:
        """roof time / time; raises AboveRoof for a row above its roof."""
        if self.above_roof:
            raise AboveRoof(f"{_above_text(pd.DataFrame([self.row]))}: {ABOVE_ROOF_HINT}")
        return self.raw_efficiency

    def __repr__(self) -> str:
        figure = f"ABOVE its roof ({self.raw_efficiency:.0%})" if self.above_roof else f"{self.raw_efficiency:.1%} of roof"
        return (f"<kernel {self.kernel} ({self.op}): {figure} ({self.bound}-bound, {self.roof}), "
                f"{_duration(self.time_s)}/call>")


@dataclass(frozen=True)
class RooflineResult:
    """What `roofline(fn, ...)` returns; `profile` is the API's Profile (plot(), advise(), save())."""

    label: str
    profile: Profile
    iterations: int
    min_bytes: float
    unprofiled_times_s: list[float]
    timed_by: str  # cuda_events or host_clock

    @property
    def kernels(self) -> pd.DataFrame:
        """The API's kernel table (totals over the profiled calls, schema.KERNEL_COLUMNS)."""
        return self.profile.kernels

    @property
    def summary(self) -> dict[str, Any]:
        return self.profile.summary

    @property
    def ceilings(self) -> Ceilings:
        return self.profile.data.ceilings

    @property
    def device(self) -> str:
        return str(self.ceilings.device_name)

    def _counted(self) -> pd.DataFrame:
        k = self.kernels
        known = k["flops"].notna() & k["bytes"].notna() & k["roof_time_s"].notna()
        return k[known]

    def _efficiency(self) -> float:
        counted = self._counted()
        total_s = float(counted["time_s"].sum())
        return float(counted["roof_time_s"].sum()) / total_s if total_s > 0 else math.nan

    @property
    def efficiency(self) -> float:
        """sum(roof_time_s) / sum(time_s) of the rows with a known cost; raises AboveRoof when one
        of them is above its roof."""
        above = self.kernels[self.kernels["above_roof"].astype(bool)]
        if len(above):
            raise AboveRoof(f"{self.label}: {_above_text(above)}: {ABOVE_ROOF_HINT}")
        return self._efficiency()

    @property
    def bound(self) -> str:
        if self.kernels.empty:
            return "unknown"
        return str(self.kernels.groupby("bound")["time_s"].sum().idxmax())

    @property
    def kernel_name(self) -> str:
        """The kernel that takes the most time ('' when the call launched none)."""
        return "" if self.kernels.empty else str(self.kernels.iloc[0]["kernel"])

    def _per_call(self, column: str) -> float:
        values = self.kernels[column].dropna()
        return float(values.sum()) / self.iterations if len(values) else math.nan

    @property
    def bytes(self) -> float:
        """Minimum traffic of the kernels, per call (NaN when no row's bytes are known)."""
        return self._per_call("bytes")

    @property
    def flops(self) -> float:
        return self._per_call("flops")

    @property
    def time_s(self) -> float:
        """The kernels' time per call, as profiled."""
        return float(self.kernels["time_s"].sum()) / self.iterations if len(self.kernels) else 0.0

    @property
    def unprofiled_time_s(self) -> float:
        return statistics.median(self.unprofiled_times_s) if self.unprofiled_times_s else math.nan

    @property
    def above_roof(self) -> list[str]:
        """Kernels above their roof: a bug in the numbers (left out of efficiency)."""
        return [str(k) for k in self.kernels.loc[self.kernels["above_roof"].astype(bool), "kernel"]]

    def kernel(self, name: str) -> KernelFigures:
        """The row whose kernel (else op) is `name`, else the one whose kernel or op contains it
        (case ignored)."""
        k = self.kernels
        exact = k[k["kernel"] == name]
        exact = exact if len(exact) else k[k["op"] == name]
        if len(exact) == 1:
            return self._figures(exact.iloc[0])
        needle = name.lower()
        hits = exact if len(exact) else k[k["kernel"].str.lower().str.contains(needle, regex=False)
                                          | k["op"].str.lower().str.contains(needle, regex=False)]
        if len(hits) == 1:
            return self._figures(hits.iloc[0])
        listed = "; ".join(f"{r.kernel} ({r.op}, {r.shapes})" for r in (hits if len(hits) else k).itertuples())
        if not len(hits):
            raise KernelNotFound(f"no kernel or op of {self.label} matches {name!r}; its kernels: {listed or 'none'}")
        raise KernelNotFound(f"{len(hits)} kernels of {self.label} match {name!r}; name one: {listed}")

    def _figures(self, row: pd.Series) -> KernelFigures:
        roof = memory_level(str(row["kernel"])) if row["bound"] == "memory" else f"{row['unit']}.{row['precision']}"
        return KernelFigures(kernel=str(row["kernel"]), op=str(row["op"]), raw_efficiency=float(row["efficiency"]),
                             bound=str(row["bound"]), time_s=float(row["time_s"]) / self.iterations,
                             flops=float(row["flops"]) / self.iterations, bytes=float(row["bytes"]) / self.iterations,
                             launches=float(row["calls"]) / self.iterations, roof=str(roof),
                             above_roof=bool(row["above_roof"]), row=row)

    def record(self) -> dict[str, Any]:
        """The figures the report, JUnit properties and baselines keep (records.FIELDS)."""
        def finite(x: float) -> float | None:
            return float(x) if math.isfinite(x) else None

        sources = sorted({r.source for r in [*self.ceilings.memory_bytes_per_s.values(),
                                             *self.ceilings.compute_flops_per_s.values()]})
        efficiency = math.nan if self.above_roof else self._efficiency()
        return {"label": self.label, "kernel": self.kernel_name, "efficiency": finite(efficiency),
                "above_roof": ", ".join(self.above_roof),
                "bound": self.bound, "time_s": finite(self.time_s), "unprofiled_time_s": finite(self.unprofiled_time_s),
                "bytes": finite(self.bytes), "min_bytes": finite(self.min_bytes), "flops": finite(self.flops),
                "device": self.device, "device_kind": str(self.ceilings.device_kind), "ceilings": ",".join(sources)}

    def __repr__(self) -> str:
        figure = f"{self._efficiency():.1%} of roof"
        if self.above_roof:
            figure = f"efficiency unknown: {len(self.above_roof)} kernel(s) ABOVE their roof"
        return (f"<roofline {self.label} on {self.device}: {figure} ({self.bound}-bound), "
                f"{_duration(self.time_s)}/call (un-profiled {_duration(self.unprofiled_time_s)}), "
                f"{_si(self.bytes, 'B')} vs min {_si(self.min_bytes, 'B')}, {_si(self.flops, 'FLOP')}; "
                f"top {self.kernel_name or 'none'}>")


def _tensors(obj: Any, depth: int = 0) -> Iterator[torch.Tensor]:
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, torch.nn.Module):
        yield from obj.parameters()
        yield from obj.buffers()
    elif depth < 4 and isinstance(obj, (list, tuple, set, frozenset)):
        for item in obj:
            yield from _tensors(item, depth + 1)
    elif depth < 4 and isinstance(obj, dict):
        for item in obj.values():
            yield from _tensors(item, depth + 1)


def tensor_bytes(*objs: Any) -> int:
    """Bytes of the tensors in objs (nested containers, modules' parameters and buffers), each view
    once and each storage at most its size: a tensor passed twice, or as two views, is read once."""
    by_storage: dict[tuple[str, int], tuple[int, set[tuple[Any, ...]]]] = {}
    for t in (t for obj in objs for t in _tensors(obj)):
        if t.layout != torch.strided:
            continue
        storage = t.untyped_storage()
        key = (str(t.device), storage.data_ptr())
        size, views = by_storage.setdefault(key, (storage.nbytes(), set()))
        views.add((t.data_ptr(), tuple(t.shape), t.stride(), t.dtype, t.numel() * t.element_size()))
    return sum(min(size, sum(v[-1] for v in views)) for size, views in by_storage.values())


def plain_times(prof: Profile, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                iters: int, device_kind: str, warmup: int) -> tuple[list[float], str]:
    """Seconds of `iters` calls without the profiler: the ones the API already timed after its
    session (capture/run/runner.time_calls, metadata "unprofiled_calls"), else timed here by the same
    function (the API's timing failed); "cuda_events", or "host_clock" on a CPU."""
    plain = prof.data.metadata.get("unprofiled_calls")
    if not isinstance(plain, dict) or not plain.get("call_times_s"):
        plain = time_calls(fn, args, kwargs, warmup=warmup, iters=iters, device_kind=device_kind)
    timed_by = "cuda_events" if plain.get("timed_by") == "cuda_events" else "host_clock"
    return [float(t) for t in plain["call_times_s"]], timed_by


def measure(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], *, warmup: int, iters: int,
            device_kind: str, ceilings: Ceilings, label: str) -> RooflineResult:
    """Profile fn (warm-up, then `iters` profiled calls); the API times `iters` calls without the
    profiler after its session (plain_times)."""
    prof = profile(fn, *args, warmup=warmup, iters=iters, device=device_kind, ceilings=ceilings, **kwargs)
    out = fn(*args, **kwargs)
    owner = getattr(fn, "__self__", None)  # a module's bound method (forward) reads its parameters too
    modules = [m for m in (fn, owner) if isinstance(m, torch.nn.Module)]
    min_bytes = tensor_bytes(args, kwargs, modules) + tensor_bytes(out)
    del out
    times, timed_by = plain_times(prof, fn, args, kwargs, iters, device_kind, warmup)
    return RooflineResult(label=label, profile=prof, iterations=iters, min_bytes=float(min_bytes),
                          unprofiled_times_s=times, timed_by=timed_by)
