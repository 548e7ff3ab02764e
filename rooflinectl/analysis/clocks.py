"""The clocks the kernels ran at, and what throttled them: NVML samples (capture/run/nvml_sampler.py)
laid over the kernel timeline. Pure: metadata and DataFrames in, arrays and dicts out.

Each sample stands for the time around it: from halfway to the previous sample to halfway to the
next, never further than COVER_PERIODS sampling periods from it. A launch's clock is the
time-weighted mean over the part of its interval that samples cover (a launch shorter than the
period takes the one sample around it). Samples NVML flagged `gpu_idle` are left out of the
clock: the clock had dropped because nothing ran, and says nothing of the clock kernels get.
A launch no non-idle sample covers has no clock (NaN) and its roofs do not move.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from rooflinectl.analysis.json_values import json_ready
from rooflinectl.analysis.roofline import clock_scale, peak_of
from rooflinectl.attribution.group import GROUP_KEY
from rooflinectl.ceilings.detect import THROTTLE_REASONS
from rooflinectl.ceilings.model import Ceilings
from rooflinectl.profile_sections import Clocks, RunMetadata

IDLE_BIT = 0x1
COVER_PERIODS = 1.5
# Reasons that lower the clock because a power or thermal limit was reached: they cost time.
# The others (sync boost, application clocks, display) are settings, reported but not advised on.
CAPPING_REASONS = ("sw_power_cap", "hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown",
                   "hw_power_brake_slowdown", "board_limit", "reliability")
ROOF_SHIFT_NOTICE = 0.03  # show says so when the run's clock moves a compute roof by more than this


@dataclass
class Samples:
    """One device's samples as arrays (NaN / -1 where NVML did not answer), times on the trace's clock."""

    t_ns: np.ndarray
    sm_clock_mhz: np.ndarray
    mem_clock_mhz: np.ndarray
    power_w: np.ndarray
    temperature_c: np.ndarray
    gpu_util_pct: np.ndarray
    reasons: np.ndarray  # int64 bitmask, -1 unknown
    period_s: float
    device: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.t_ns)


def _floats(values: list[Any] | None, n: int) -> np.ndarray:
    out = np.full(n, np.nan)
    for i, v in enumerate((values or [])[:n]):
        if v is not None:
            out[i] = float(v)
    return out


def device_samples(metadata: RunMetadata) -> Samples | None:
    """The sampled device's aligned samples from a profile's metadata["nvml"] (None without)."""
    nvml = metadata.get("nvml") or {}
    devices = nvml.get("devices") or []
    if nvml.get("status") != "sampled" or not nvml.get("aligned") or not devices:
        return None
    device = next((d for d in devices if d.get("index") == metadata.get("device_index")), devices[0])
    cols = device.get("samples") or {}
    t_ns = np.asarray([int(v) for v in cols.get("t_ns") or []], dtype=np.int64)
    n = len(t_ns)
    if not n:
        return None
    order = np.argsort(t_ns, kind="stable")
    reasons = np.nan_to_num(_floats(cols.get("reasons"), n), nan=-1).astype(np.int64)
    return Samples(
        t_ns=t_ns[order],
        sm_clock_mhz=_floats(cols.get("sm_clock_mhz"), n)[order],
        mem_clock_mhz=_floats(cols.get("mem_clock_mhz"), n)[order],
        power_w=_floats(cols.get("power_mw"), n)[order] / 1e3,
        temperature_c=_floats(cols.get("temperature_c"), n)[order],
        gpu_util_pct=_floats(cols.get("gpu_util_pct"), n)[order],
        reasons=reasons[order],
        period_s=float(nvml.get("period_s") or 0.02),
        device={k: v for k, v in device.items() if k not in ("samples", "processes")},
    )


class _StepFunction:
    """A piecewise-constant signal (one value per covered interval) and its running integral, so
    the mean over any [start, end] is two interpolations."""

    def __init__(self, t_ns: np.ndarray, values: np.ndarray, max_half_ns: float) -> None:
        keep = ~np.isnan(values)
        t, v = t_ns[keep].astype(float), values[keep]
        mids = (t[1:] + t[:-1]) / 2
        self.lo = np.maximum(np.concatenate([[-np.inf], mids]), t - max_half_ns) if len(t) else t
        self.hi = np.minimum(np.concatenate([mids, [np.inf]]), t + max_half_ns) if len(t) else t
        self.values = v
        knots = np.column_stack([self.lo, self.hi]).ravel()
        widths = self.hi - self.lo
        area = np.cumsum(widths * v)
        covered = np.cumsum(widths)
        self.knots = knots
        self.area = np.column_stack([np.concatenate([[0.0], area[:-1]]), area]).ravel() if len(t) else knots
        self.covered = np.column_stack([np.concatenate([[0.0], covered[:-1]]), covered]).ravel() if len(t) else knots

    def integrals(self, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(integral of the value, covered length) over each [start, end], in value x ns and ns."""
        if not len(self.values):
            zeros = np.zeros(len(start))
            return zeros, zeros.copy()
        area = np.interp(end, self.knots, self.area) - np.interp(start, self.knots, self.area)
        covered = np.interp(end, self.knots, self.covered) - np.interp(start, self.knots, self.covered)
        return area, covered

    def at(self, t: np.ndarray) -> np.ndarray:
        """The value at each instant (NaN where no sample covers it)."""
        if not len(self.values):
            return np.full(len(t), np.nan)
        i = np.clip(np.searchsorted(self.lo, t, side="right") - 1, 0, len(self.values) - 1)
        inside = (t >= self.lo[i]) & (t <= self.hi[i])
        return np.where(inside, self.values[i], np.nan)

    def mean_over(self, start: np.ndarray, end: np.ndarray) -> np.ndarray:
        """Time-weighted mean over each interval's covered part; the point value for instants."""
        area, covered = self.integrals(start, end)
        with np.errstate(divide="ignore", invalid="ignore"):
            mean = np.where(covered > 0, area / covered, np.nan)
        return np.where(end > start, mean, self.at(start))


def _max_half_ns(samples: Samples) -> float:
    gaps = np.diff(samples.t_ns)
    typical = float(np.median(gaps)) if len(gaps) else samples.period_s * 1e9
    return COVER_PERIODS * max(typical, samples.period_s * 1e9)


def _busy_clock(samples: Samples) -> _StepFunction:
    not_idle = (samples.reasons < 0) | ((samples.reasons & IDLE_BIT) == 0)
    return _StepFunction(samples.t_ns, np.where(not_idle, samples.sm_clock_mhz, np.nan), _max_half_ns(samples))


def launch_sm_clock_mhz(launches: pd.DataFrame, samples: Samples | None) -> np.ndarray:
    """The SM clock each launch ran at (MHz; NaN where no sample covers it)."""
    if samples is None or launches.empty:
        return np.full(len(launches), np.nan)
    start = launches["start_ns"].to_numpy(dtype=float)
    end = launches["end_ns"].to_numpy(dtype=float)
    return _busy_clock(samples).mean_over(start, end)


def with_sm_clock(launches: pd.DataFrame, samples: Samples | None) -> pd.DataFrame:
    """The launches with their `sm_clock_mhz` (grouping then takes its time-weighted mean)."""
    return launches.assign(sm_clock_mhz=launch_sm_clock_mhz(launches, samples))


def throttle_kernel_time_s(launches: pd.DataFrame, samples: Samples) -> dict[str, float]:
    """Kernel time (sum of launch durations) during which NVML reported each clocks-event reason
    other than gpu_idle, measured over the sampled part of the launches."""
    start = launches["start_ns"].to_numpy(dtype=float)
    end = launches["end_ns"].to_numpy(dtype=float)
    known = samples.reasons >= 0
    seen = int(np.bitwise_or.reduce(samples.reasons[known])) if known.any() else 0
    half = _max_half_ns(samples)
    out: dict[str, float] = {}
    for bit, name in THROTTLE_REASONS.items():
        if bit == IDLE_BIT or not seen & bit:
            continue
        flag = np.where(known, ((samples.reasons & bit) != 0).astype(float), np.nan)
        area, _ = _StepFunction(samples.t_ns, flag, half).integrals(start, end)
        if area.sum() > 0:
            out[name] = float(area.sum()) / 1e9
    return out


def _overlapping(lo: np.ndarray, hi: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Which [lo, hi] intervals meet at least one [start, end] interval (a boolean per lo)."""
    order = np.argsort(start, kind="stable")
    starts, ends = start[order], np.maximum.accumulate(end[order])  # furthest end among launches so far
    j = np.searchsorted(starts, hi, side="right") - 1
    return (j >= 0) & (ends[np.clip(j, 0, None)] >= lo)


def _stats(values: np.ndarray) -> dict[str, float] | None:
    values = values[~np.isnan(values)]
    if not len(values):
        return None
    return {"mean": float(values.mean()), "min": float(values.min()), "max": float(values.max())}


def other_processes(nvml: dict[str, Any], device: dict[str, Any]) -> dict[str, Any]:
    """Processes other than ours that NVML saw on the GPU, with their memory and utilisation.

    In a container NVML may list processes by host PIDs, so ours may not appear under our PID:
    then every listed process but one is counted as another.
    """
    own = nvml.get("own_pid")
    listed: dict[int, int] = {}
    most_at_once = 0
    for _, procs in device.get("processes") or []:
        most_at_once = max(most_at_once, len(procs))
        for pid, used in procs:
            listed[int(pid)] = max(listed.get(int(pid), 0), int(used or 0))
    util = {int(pid): (sm, mem) for pid, sm, mem in device.get("process_util_max_pct") or []}
    if own in listed or own in util or not listed:
        others = sorted((set(listed) | set(util)) - {own})
        count = len(others)
        used = sum(listed.get(p, 0) for p in others)
        sm = max((util[p][0] for p in others if p in util), default=0)
    else:  # our PID is not NVML's: the biggest user is taken to be us
        count = max(most_at_once - 1, 0)
        used = sum(sorted(listed.values())[:-1]) if count else 0
        sm = 0
    return {"count": count, "used_bytes": float(used), "sm_util_max_pct": float(sm)}


def clock_summary(launches: pd.DataFrame, samples: Samples | None, metadata: RunMetadata,
                  table: pd.DataFrame | None = None, ceilings: Ceilings | None = None) -> Clocks | None:
    """What the summary says of clocks, power and throttling while the counted kernels ran
    (schema.SUMMARY_KEYS "clocks"), with the roof shifts of the placed table when given; None for
    a run NVML does not apply to (CPU, older profiles)."""
    out = _clock_summary(launches, samples, metadata)
    if out is not None and out.get("status") == "sampled" and table is not None and ceilings is not None:
        out["roof_shifts"] = roof_clock_shifts(table, ceilings)
        if samples is not None and not launches.empty:
            out.update(capping_cost(launches, samples, table))
    return json_ready(out)


def capping_cost(launches: pd.DataFrame, samples: Samples, table: pd.DataFrame) -> dict[str, Any]:
    """Kernel time under a power or thermal cap (any of CAPPING_REASONS), and what the cap cost
    the compute-bound groups: per launch, its time under the cap x (1 - its clock / the device's
    max SM clock), summed per table row (`cap_cost_by_row`: [row, seconds]).

    Compute-bound work runs in proportion to the SM clock; memory-bound work is not counted (the
    HBM clock does not drop under these caps). A launch's clock is its mean over the launch, so a
    launch longer than the sampling period that was capped for part of it is approximated.
    """
    max_mhz = samples.device.get("max_sm_clock_mhz")
    mask = sum(bit for bit, name in THROTTLE_REASONS.items() if name in CAPPING_REASONS)
    known = samples.reasons >= 0
    flag = np.where(known, ((samples.reasons & mask) != 0).astype(float), np.nan)
    start = launches["start_ns"].to_numpy(dtype=float)
    end = launches["end_ns"].to_numpy(dtype=float)
    capped_ns, _ = _StepFunction(samples.t_ns, flag, _max_half_ns(samples)).integrals(start, end)
    out: dict[str, Any] = {"capped_kernel_s": float(capped_ns.sum()) / 1e9, "cap_cost_s": 0.0, "cap_cost_by_row": []}
    if not max_mhz or not capped_ns.any():
        return out
    rows = table.reset_index(drop=True).reset_index(names="row")[["row", *GROUP_KEY, "bound"]]
    where = launches[GROUP_KEY].merge(rows, on=GROUP_KEY, how="left")
    clock = launch_sm_clock_mhz(launches, samples)
    slower = np.clip(1.0 - np.nan_to_num(clock, nan=float(max_mhz)) / float(max_mhz), 0.0, None)
    cost_s = np.where(where["bound"].to_numpy() == "compute", capped_ns * slower / 1e9, 0.0)
    by_row = pd.Series(cost_s).groupby(where["row"].to_numpy()).sum()
    out["cap_cost_s"] = float(cost_s.sum())
    out["cap_cost_by_row"] = [[int(r), float(c)] for r, c in by_row.items() if c > 0]
    return out


def _clock_summary(launches: pd.DataFrame, samples: Samples | None, metadata: RunMetadata) -> Clocks | None:
    nvml = metadata.get("nvml")
    if not nvml:
        return None
    if samples is None:
        status = nvml.get("status", "not_sampled")
        message = nvml.get("message") or ("NVML samples could not be aligned with the trace" if status == "sampled"
                                          else "NVML was not sampled")
        return {"status": status if status != "sampled" else "unaligned", "message": message}
    out: dict[str, Any] = {"status": "sampled", "samples": len(samples), "period_s": samples.period_s,
                           "device_index": samples.device.get("index"),
                           "max_sm_clock_mhz": samples.device.get("max_sm_clock_mhz"),
                           "max_mem_clock_mhz": samples.device.get("max_mem_clock_mhz"),
                           "power_limit_w": samples.device.get("power_limit_w")}
    devices = nvml.get("devices") or [{}]
    out["other_processes"] = other_processes(nvml, next((d for d in devices if d.get("index") == out["device_index"]),
                                                        devices[0]))
    if launches.empty:
        return out
    start = launches["start_ns"].to_numpy(dtype=float)
    end = launches["end_ns"].to_numpy(dtype=float)
    span = (float(start.min()), float(end.max()))
    out["span_ns"] = [span[0], span[1]]
    kernel_s = (end - start) / 1e9
    clock = launch_sm_clock_mhz(launches, samples)
    clocked = ~np.isnan(clock)
    busy = _busy_clock(samples)
    in_span = (samples.t_ns >= span[0] - _max_half_ns(samples)) & (samples.t_ns <= span[1] + _max_half_ns(samples))
    if clocked.any():
        touched = busy.values[_overlapping(busy.lo, busy.hi, start, end)]
        out["sm_clock_mhz"] = {"mean": float(np.average(clock[clocked], weights=np.maximum(kernel_s[clocked], 1e-12))),
                               "min": float(touched.min()), "max": float(touched.max())}
        out["clocked_kernel_time_share"] = float(kernel_s[clocked].sum() / kernel_s.sum()) if kernel_s.sum() else None
    out["mem_clock_mhz"] = _stats(samples.mem_clock_mhz[in_span])
    power = _stats(samples.power_w[in_span])
    out["power_w"] = {"mean": power["mean"], "max": power["max"]} if power else None
    temperature = _stats(samples.temperature_c[in_span])
    out["temperature_c_max"] = temperature["max"] if temperature else None
    util = _stats(samples.gpu_util_pct[in_span])
    out["gpu_util_pct_mean"] = util["mean"] if util else None
    out["kernel_time_s"] = float(kernel_s.sum())
    out["throttle_kernel_s"] = throttle_kernel_time_s(launches, samples)
    return out


def roof_clock_shifts(table: pd.DataFrame, ceilings: Ceilings) -> list[dict[str, Any]]:
    """Per compute roof the kernels used: the clock the roof holds at, the clock its kernels ran
    at (time-weighted), and how much that moved the peak and the rows' attainable figures."""
    if table.empty or "sm_clock_mhz" not in table.columns:
        return []
    out = []
    rows = table[table["sm_clock_mhz"].notna() & table["intensity"].notna() & (table["time_s"] > 0)]
    keys = [ceilings.compute_roof_key(u, p) for u, p in zip(rows["unit"], rows["precision"])]
    for key in sorted({k for k in keys if k is not None}):
        roof = ceilings.compute_flops_per_s[key]
        group = rows[[k == key for k in keys]]
        if not roof.clock_mhz or group.empty:
            continue
        clock = float(np.average(group["sm_clock_mhz"], weights=group["time_s"]))
        bandwidth = ceilings.dram().value
        before, after = [], []
        for r in group.itertuples(index=False):
            peak = peak_of(ceilings, r.unit, r.precision)
            before.append(min(peak, r.intensity * bandwidth))
            after.append(min(peak * clock_scale(roof, r.sm_clock_mhz), r.intensity * bandwidth))
        weights = group["time_s"].to_numpy(dtype=float)
        ratio = np.divide(after, before, out=np.ones(len(before)), where=np.asarray(before) > 0)
        out.append({"roof": key, "roof_clock_mhz": float(roof.clock_mhz), "kernel_clock_mhz": clock,
                    "peak_change": clock / float(roof.clock_mhz) - 1.0,
                    "peak_at_kernel_clock_flops_per_s": roof.value * clock_scale(roof, clock),
                    "notable": abs(clock / float(roof.clock_mhz) - 1.0) > ROOF_SHIFT_NOTICE,
                    "attainable_change": float(np.average(ratio, weights=weights)) - 1.0,
                    "time_s": float(weights.sum())})
    return out
