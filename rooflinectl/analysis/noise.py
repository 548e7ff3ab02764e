"""How much of a change between two profiles is noise: an interval from the per-iteration times
each profile holds.

Method (what `diff` prints and gates on):
- Samples: the iterations timed without the profiler (`unprofiled_step_times_s`) when both
  profiles have at least two, else the profiled steady-state iterations (`iteration_times_s`).
  The same kind on both sides; with fewer than two on either side there is no interval.
- The ratio of the means new / base, on a log scale: its standard error by the delta method,
  se = sqrt(var_b / (n_b mean_b^2) + var_n / (n_n mean_n^2)), with Welch's degrees of freedom,
  and a 95% Student t interval, ratio x exp(+-t se). `diff` prints it beside the total it
  compares (window or kernel time per iteration, from the profiled iterations), and gates the
  total on it: a total regression needs the step's interval wholly above no change.
- A group's time per iteration is a total, without per-iteration samples. Two floors stand for
  its noise: the step's relative width around the group's own change (a big group), and the
  step's variation in seconds (a small group: a short CPU op on a loaded machine can double
  while the step hides it). A group regresses only past both.
- Iterations of one run are not independent draws of another run (clocks, other processes, the
  machine's load change between runs): the interval says what the runs' own variation allows, no
  more. A change outside it on a loaded machine can still be the load.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

MIN_SAMPLES = 2
# Student t 0.975 quantiles by degrees of freedom (1-30); above 30 the normal's 1.96 is within 4%
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
         2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
         2.045, 2.042)


def t975(df: float) -> float:
    """The 0.975 quantile of Student's t (df rounded down; 1.96 above 30)."""
    if not math.isfinite(df) or df > len(_T975):
        return 1.96
    return _T975[max(int(df), 1) - 1]


@dataclass(frozen=True)
class Noise:
    """The step time from both profiles' samples: the ratio of the means new / base and its 95%
    interval on a log scale, ratio x exp(+-half_width_log)."""

    ratio: float
    half_width_log: float
    source: str  # "un-profiled steps" or "profiled iterations"
    base_n: int
    new_n: int
    base_mean_s: float = 0.0  # the base's mean step time, seconds

    @property
    def change_pct(self) -> float:
        return 100.0 * (self.ratio - 1.0)

    def interval_pct(self, change_pct: float | None = None) -> tuple[float, float]:
        """The interval of the step's change in percent; around change_pct instead (a group's
        change, given the step's relative noise) when given."""
        ratio = self.ratio if change_pct is None else 1.0 + change_pct / 100.0
        return (100.0 * (ratio * math.exp(-self.half_width_log) - 1.0),
                100.0 * (ratio * math.exp(self.half_width_log) - 1.0))

    def significant(self, change_pct: float | None = None) -> bool:
        """The interval leaves out no change at all: not the runs' own variation."""
        low, high = self.interval_pct(change_pct)
        return low > 0.0 or high < 0.0

    def slower(self, change_pct: float | None = None) -> bool:
        """The interval lies wholly above no change: the step (or the group) did get slower."""
        return self.interval_pct(change_pct)[0] > 0.0

    def step_noise_s(self) -> float:
        """The step's own variation in seconds (base mean x the interval's upper relative width):
        a group that adds less than this to the step is not told apart from it."""
        return self.base_mean_s * (math.exp(self.half_width_log) - 1.0)

    def describe(self) -> str:
        return f"95% interval from {self.base_n} and {self.new_n} {self.source}"


def _samples(summary: dict[str, Any], key: str) -> np.ndarray:
    values = np.asarray([v for v in (summary.get(key) or []) if isinstance(v, (int, float))], dtype=float)
    return values[np.isfinite(values) & (values > 0)]


def step_samples(base: dict[str, Any], new: dict[str, Any]) -> tuple[np.ndarray, np.ndarray, str] | None:
    """The per-iteration times of both summaries, of one kind (see the module), or None."""
    for key, source in (("unprofiled_step_times_s", "un-profiled steps"), ("iteration_times_s", "profiled iterations")):
        b, n = _samples(base, key), _samples(new, key)
        if len(b) >= MIN_SAMPLES and len(n) >= MIN_SAMPLES:
            return b, n, source
    return None


def step_noise(base: dict[str, Any], new: dict[str, Any]) -> Noise | None:
    """The interval of the step time's ratio from two profiles' summaries (None: too few samples)."""
    found = step_samples(base, new)
    if found is None:
        return None
    b, n, source = found
    parts = [float(np.var(x, ddof=1)) / (len(x) * float(np.mean(x)) ** 2) for x in (b, n)]
    se = math.sqrt(sum(parts))
    ratio = float(np.mean(n) / np.mean(b))
    if se == 0.0:
        return Noise(ratio, 0.0, source, len(b), len(n), float(np.mean(b)))
    df = se**4 / sum(p**2 / (len(x) - 1) for p, x in zip(parts, (b, n)) if p > 0)
    return Noise(ratio, t975(df) * se, source, len(b), len(n), float(np.mean(b)))
