"""What the roofline charts draw beyond a profile's own rows, computed here so that the chart
modules (outputs/plot*.py) only draw: each collective's message size and the link's measured
curve (the link panel), the clock strip (`plot --clocks`), and the matched pairs of a before/after
chart with their speed-ups. The CLI and the API compute these and hand them to the chart.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rooflinectl.analysis.clocks import CAPPING_REASONS, IDLE_BIT, Samples, device_samples
from rooflinectl.analysis.links import link_curve, message_bytes
from rooflinectl.analysis.matching import GroupMatch, match_groups, per_iteration
from rooflinectl.analysis.selection import filter_groups
from rooflinectl.ceilings.detect import THROTTLE_REASONS
from rooflinectl.errors import UsageError
from rooflinectl.profile_model import ProfileData

CAPPING_MASK = sum(bit for bit, name in THROTTLE_REASONS.items() if name in CAPPING_REASONS)


@dataclass(frozen=True)
class ClockStrip:
    """The NVML samples as the strip under the chart draws them: seconds since the first counted
    kernel, the spans a power or thermal cap was on, which samples were idle."""

    samples: Samples
    t_s: np.ndarray
    counted_end_s: float  # the counted kernels' span: [0, counted_end_s]
    capped_spans: list[tuple[float, float]]
    busy: np.ndarray  # bool per sample: not flagged idle (or no reasons read)
    capped: np.ndarray  # bool per sample: a power or thermal cap on
    reason_names: list[str]  # per sample: the throttle reasons NVML gave, idle left out


@dataclass(frozen=True)
class ChartModel:
    """The figures a single-profile chart draws besides the rows: message bytes per kernel row
    (aligned to the profile's kernel table, NaN for rows not held to the link), the link's
    measured all-reduce curve, and the clock strip when asked."""

    message_bytes: pd.Series
    link_curve: tuple[np.ndarray, np.ndarray] | None = None
    clocks: ClockStrip | None = None


def _spans(t_s: np.ndarray, on: np.ndarray, half_s: float) -> list[tuple[float, float]]:
    """Runs of consecutive samples with `on` set, each sample standing for +- half a period."""
    spans: list[tuple[float, float]] = []
    for t, flag in zip(t_s, on):
        if not flag:
            continue
        if spans and t - half_s <= spans[-1][1] + 1e-12:
            spans[-1] = (spans[-1][0], float(t + half_s))
        else:
            spans.append((float(t - half_s), float(t + half_s)))
    return spans


def clock_strip(data: ProfileData) -> ClockStrip:
    """The clock strip of a profile, or one sentence saying why it has none."""
    strip = clock_strip_or_why(data)
    if isinstance(strip, str):
        raise UsageError(f"--clocks needs the NVML samples of a GPU run; this profile has none ({strip}).")
    return strip


def clock_strip_or_why(data: ProfileData) -> ClockStrip | str:
    """The NVML samples over the run as the strip and the report draw them, or why there are none."""
    samples = device_samples(data.metadata)
    if samples is None:
        nvml = data.metadata.get("nvml") or {}
        return str(nvml.get("message") or ("a CPU run" if data.metadata.get("device_kind") == "cpu"
                                           else "the profile holds no NVML samples"))
    span = (data.summary.get("clocks") or {}).get("span_ns") or [float(samples.t_ns[0]), float(samples.t_ns[-1])]
    zero = float(span[0])
    t_s = (samples.t_ns - zero) / 1e9
    capped = (samples.reasons >= 0) & ((samples.reasons & CAPPING_MASK) != 0)
    busy = (samples.reasons < 0) | ((samples.reasons & IDLE_BIT) == 0)
    names = [", ".join(n for bit, n in THROTTLE_REASONS.items() if r >= 0 and r & bit and bit != IDLE_BIT)
             for r in samples.reasons.tolist()]
    return ClockStrip(samples, t_s, (float(span[1]) - zero) / 1e9, _spans(t_s, capped, samples.period_s / 2), busy,
                      capped, names)


def chart_model(data: ProfileData, clocks: bool = False) -> ChartModel:
    """What plot_profile needs besides `data` (clocks: the strip too, or one sentence why not)."""
    kernels = data.kernels
    collective = kernels["unit"] == "link" if "unit" in kernels.columns else pd.Series(False, index=kernels.index)
    sizes = pd.Series(math.nan, index=kernels.index, dtype=float)
    for i in kernels.index[collective]:
        sizes.at[i] = message_bytes(kernels.at[i, "shapes"], kernels.at[i, "dtype"])
    return ChartModel(sizes, link_curve(data.ceilings), clock_strip(data) if clocks else None)


@dataclass(frozen=True)
class Comparison:
    """A before/after chart's figures: the matched pairs (with `speedup`, base time over new, per
    iteration), what matched nothing, both sides' rows per iteration after --filter, and each
    side's whole kernel time per iteration."""

    match: GroupMatch
    base_rows: pd.DataFrame
    new_rows: pd.DataFrame
    base_total_s: float
    new_total_s: float


def compare_for_chart(before: ProfileData, after: ProfileData, filter_regex: str | None = None) -> Comparison:
    """Match the groups of two profiles per iteration (the matcher `diff` uses) for the chart."""
    base_all, new_all = per_iteration(before), per_iteration(after)
    base_rows, new_rows = filter_groups(base_all, filter_regex), filter_groups(new_all, filter_regex)
    match = match_groups(base_rows, new_rows)
    match.pairs["speedup"] = match.pairs["time_s_base"].astype(float) / match.pairs["time_s_new"].astype(float)
    return Comparison(match, base_rows, new_rows, float(base_all["time_s"].sum()), float(new_all["time_s"].sum()))
