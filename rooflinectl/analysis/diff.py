"""Compare two profiles: per matched group (analysis/matching.py), the change in time and the
move on the roofline; groups only in one profile; the totals and the regression verdict.

Times are per iteration (matching.per_iteration). Each change has a 95% interval from the
per-iteration times both profiles hold (analysis/noise.py); a regression is a change past the
threshold and outside that interval. A group's efficiency is its roof time over its
time (summed over its rows), its intensity FLOPs over bytes: the same definitions as one row's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from rooflinectl.analysis.matching import match_groups, per_iteration
from rooflinectl.analysis.noise import Noise, step_noise
from rooflinectl.profile_model import ProfileData, incomplete_reason, iterations_of, stale_window

MIN_GROUP_SHARE = 0.01  # a group regression counts only if it adds this share of the base total


@dataclass
class GroupChange:
    """One matched pair of groups, per iteration, as `diff` reports it."""

    label: str
    match: str  # the matching level: exact | suffix | op-shapes | kernel-op | op | module
    base_kernel: str
    new_kernel: str
    base_time_s: float
    new_time_s: float
    base_efficiency: float
    new_efficiency: float
    base_intensity: float
    new_intensity: float
    base_bound: str
    new_bound: str
    perf_ratio: float  # achieved FLOP/s (or B/s when no FLOPs) new / base: the vertical move
    name: str = ""  # the label's parts, for a narrow table: op (else kernel), module, shapes
    module: str = ""
    shapes: str = ""

    @property
    def delta_s(self) -> float:
        return self.new_time_s - self.base_time_s

    @property
    def delta_pct(self) -> float:
        return 100.0 * self.delta_s / self.base_time_s if self.base_time_s > 0 else math.inf


@dataclass
class DiffReport:
    changed: list[GroupChange]
    new: list[dict[str, Any]]  # groups only in NEW: label, kernel, time_s
    vanished: list[dict[str, Any]]  # groups only in BASE
    base_total_s: float  # the compared time: window if both profiles have one, else kernel time
    new_total_s: float
    measure: str  # "window" or "kernel time"
    base_kernel_s: float
    new_kernel_s: float
    notes: list[str] = field(default_factory=list)
    incomplete: list[str] = field(default_factory=list)  # "NEW: its run did not complete": no gate passes
    noise: Noise | None = None  # the step time's interval (analysis/noise.py); None: too few iteration times

    @property
    def total_delta_pct(self) -> float:
        return 100.0 * (self.new_total_s - self.base_total_s) / self.base_total_s if self.base_total_s > 0 else 0.0

    def interval_pct(self, change_pct: float | None = None) -> tuple[float, float] | None:
        """The step's 95% interval (None: no samples); a group's: around its change_pct."""
        if self.noise is None or (change_pct is not None and not math.isfinite(change_pct)):
            return None
        return self.noise.interval_pct(change_pct)

    def total_regressed(self, pct: float) -> bool:
        """The total grew more than pct percent, and the step's own samples say it got slower."""
        return self.total_delta_pct > pct and (self.noise is None or self.noise.slower())

    def group_regressed(self, g: GroupChange, pct: float) -> bool:
        """More than pct percent slower, by at least MIN_GROUP_SHARE of the base kernel time, and
        outside the noise: the step's relative interval around the group's change above no change,
        and more time added than the step's own variation in seconds (analysis/noise.py)."""
        if not self._group_grew(g, pct) or self.noise is None or not math.isfinite(g.delta_pct):
            return self._group_grew(g, pct)
        return self.noise.slower(g.delta_pct) and g.delta_s > self.noise.step_noise_s()

    def _group_grew(self, g: GroupChange, pct: float) -> bool:
        return g.delta_pct > pct and g.delta_s >= MIN_GROUP_SHARE * self.base_kernel_s

    def _noise_text(self, change_pct: float | None = None) -> str:
        interval = self.interval_pct(change_pct)
        if interval is None or self.noise is None:
            return ""
        step = f"step {self.noise.change_pct:+.1f}%, " if change_pct is None else ""
        return f"; {step}95% interval {interval[0]:+.1f}% to {interval[1]:+.1f}%"

    def regressions(self, pct: float) -> list[str]:
        """Sentences for what regressed by more than pct percent, outside the noise; empty when nothing did."""
        out = []
        if self.total_regressed(pct):
            out.append(f"total {self.measure} grew {self.total_delta_pct:.1f}% (> {pct:g}%{self._noise_text()})")
        out += [f"{g.label} grew {g.delta_pct:.1f}% (+{g.delta_s * 1e3:.3f} ms{self._noise_text(g.delta_pct)})"
                for g in self.changed if self.group_regressed(g, pct)]
        return out

    def within_noise(self, pct: float) -> list[str]:
        """Sentences for what grew by more than pct percent but not outside the noise: no regression."""
        out = []
        if self.total_delta_pct > pct and not self.total_regressed(pct):
            out.append(f"total {self.measure} {self.total_delta_pct:+.1f}%{self._noise_text()}")
        floor_s = self.noise.step_noise_s() if self.noise is not None else 0.0
        out += [f"{g.label} {g.delta_pct:+.1f}% (+{g.delta_s * 1e3:.3f} ms{self._noise_text(g.delta_pct)}; "
                f"the step itself varies by {floor_s * 1e3:.3f} ms)"
                for g in self.changed if self._group_grew(g, pct) and not self.group_regressed(g, pct)]
        return out


def group_label(op: str, kernel: str, module: str, shapes: str) -> str:
    """'aten::mm @ mlp.fc1 [64, 128] x [128, 256]': the op (else the kernel), where, on what."""
    name = op or kernel
    return f"{name}{' @ ' + module if module else ''}{' ' + shapes if shapes else ''}"


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator > 0 and math.isfinite(numerator) else math.nan


def _change(pair: pd.Series) -> GroupChange:
    b, n = {c: pair[f"{c}_base"] for c in ("flops", "bytes", "time_s", "roof_time_s")}, \
        {c: pair[f"{c}_new"] for c in ("flops", "bytes", "time_s", "roof_time_s")}
    rate_b, rate_n = _ratio(b["flops"], b["time_s"]), _ratio(n["flops"], n["time_s"])
    if not (rate_b > 0 and rate_n > 0):
        rate_b, rate_n = _ratio(b["bytes"], b["time_s"]), _ratio(n["bytes"], n["time_s"])
    return GroupChange(
        label=group_label(pair["op_new"], pair["kernel_new"], pair["module_new"], pair["shapes_new"]),
        match=pair["level"], base_kernel=pair["kernel_base"], new_kernel=pair["kernel_new"],
        base_time_s=float(b["time_s"]), new_time_s=float(n["time_s"]),
        base_efficiency=_ratio(b["roof_time_s"], b["time_s"]), new_efficiency=_ratio(n["roof_time_s"], n["time_s"]),
        base_intensity=_ratio(b["flops"], b["bytes"]), new_intensity=_ratio(n["flops"], n["bytes"]),
        base_bound=pair["bound_base"], new_bound=pair["bound_new"],
        perf_ratio=rate_n / rate_b if rate_b > 0 and rate_n > 0 else math.nan,
        name=str(pair["op_new"] or pair["kernel_new"]), module=str(pair["module_new"] or ""),
        shapes=str(pair["shapes_new"] or ""),
    )


def _lonely(rows: pd.DataFrame) -> list[dict[str, Any]]:
    def cell_text(row: Any, column: str) -> str:
        value = getattr(row, column, "")
        return "" if pd.isna(value) else str(value)

    out = [{"label": group_label(cell_text(r, "op"), cell_text(r, "kernel"), cell_text(r, "module"), cell_text(r, "shapes")),
            "kernel": cell_text(r, "kernel"), "time_s": float(r.time_s)} for r in rows.itertuples()]
    return sorted(out, key=lambda r: (-r["time_s"], r["label"], r["kernel"]))


def diff_profiles(base: ProfileData, new: ProfileData) -> DiffReport:
    """Matched groups (sorted by |change|, then label), new and vanished groups, and totals."""
    b, n = per_iteration(base), per_iteration(new)
    match = match_groups(b, n)
    changed = [_change(pair) for _, pair in match.pairs.iterrows()]
    changed.sort(key=lambda g: (-abs(round(g.delta_s, 12)), g.label, g.base_kernel))
    kernel_b, kernel_n = float(b["time_s"].sum()), float(n["time_s"].sum())
    win_b, win_n = base.summary.get("window_s"), new.summary.get("window_s")
    notes = []
    stale = [side for side, p in (("BASE", base), ("NEW", new)) if stale_window(p.summary)]
    if win_b and win_n and not stale:
        totals, measure = (float(win_b) / iterations_of(base), float(win_n) / iterations_of(new)), "window"
    else:
        totals, measure = (kernel_b, kernel_n), "kernel time"
        notes.append(f"{' and '.join(stale)}'s window was measured on the host (busy longer than the window: "
                     "rooflinectl before 2026-11-29): comparing total kernel time" if stale
                     else "no window in one of the profiles: comparing total kernel time")
    incomplete = [f"{side}: {reason}" for side, reason in (("BASE", incomplete_reason(base)),
                                                            ("NEW", incomplete_reason(new))) if reason]
    if base.ceilings.device_name != new.ceilings.device_name:
        notes.append(f"different devices: {base.ceilings.device_name} vs {new.ceilings.device_name}")
    return DiffReport(changed=changed, new=_lonely(match.only_new), vanished=_lonely(match.only_base),
                      base_total_s=totals[0], new_total_s=totals[1], measure=measure,
                      base_kernel_s=kernel_b, new_kernel_s=kernel_n, notes=notes, incomplete=incomplete,
                      noise=step_noise(base.summary, new.summary))
