"""Run every registered rule on a profile, cap the savings by Amdahl, rank, and give the verdict."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from rooflinectl.analysis.advice.common import usable
from rooflinectl.analysis.advice.location import located
from rooflinectl.analysis.advice.merge import is_note, merge_notes, merge_patterns, reading_order
from rooflinectl.analysis.advice.registry import (
    RULES,
    SEVERITIES,
    AdviceContext,
    Finding,
    Rule,
    Thresholds,
    Verification,
    severity_rank,
)
from rooflinectl.analysis.json_values import number_or_nan
from rooflinectl.errors import EXIT_FINDINGS, EXIT_INCOMPLETE, EXIT_OK
from rooflinectl.profile_model import ProfileData, incomplete_reason, iterations_of
from rooflinectl.schema import KERNEL_COLUMNS

_DEFAULTS = {"str": "", "int": 0, "float": math.nan, "bool": False}


@dataclass
class AdviceReport:
    """The ranked findings and the run's figures they are measured against."""

    findings: list[Finding]
    rules: list[Rule]  # the rules that ran, in id order
    run_time_s: float
    total_kernel_time_s: float
    total_saving_s: float  # Amdahl-capped: no kernel row gives more than its time
    device_name: str
    omitted: dict[str, int] = field(default_factory=dict)  # rule id -> findings left out (per-rule cap)
    profile_path: str = ""
    active_gates: tuple[str, ...] = ()  # gates whose threshold was set
    incomplete: str = ""  # why the profile cannot pass a gate (profile_model.incomplete_reason), '' if it can
    hidden: int = 0  # fixes left out for saving less than Thresholds.hide_below_share of the run
    hide_below_share: float = 0.0
    left_out: list[Finding] = field(default_factory=list)  # beyond the shown limits (counted in omitted)
    source_root: str = ""  # the profiled run's working directory: relative source paths are under it
    paths_from: str = ""  # the folder GitHub annotations name files from (the repository's root; '' the cwd)
    iterations: float = 1.0  # the profiled iterations its times are totals over (summary "iterations")

    @property
    def actions(self) -> list[Finding]:
        """The shown findings with a saving, in ranked order."""
        return [f for f in self.findings if not is_note(f)]

    @property
    def notes(self) -> list[Finding]:
        """The shown findings without a saving (stop here, data quality, gates), after the actions."""
        return [f for f in self.findings if is_note(f)]

    @property
    def instances(self) -> int:
        """Every finding's instances, shown or not: what the rules found before merging."""
        return sum(f.count for f in [*self.findings, *self.left_out])

    def findings_of(self, rule_id: str) -> list[Finding]:
        return [f for f in self.findings if f.rule_id == rule_id]

    def worst_severity(self) -> str | None:
        every = [*self.findings, *self.left_out]
        if not every:
            return None
        return max((f.severity for f in every), key=severity_rank)

    def __repr__(self) -> str:
        """One line for a notebook: findings by severity, the saving, the top finding (the whole
        report is `str`-rendered by `rooflinectl advise`, or tabled by to_frame())."""
        every = [*self.findings, *self.left_out]
        counts = ", ".join(f"{sum(f.severity == s for f in every)} {s}" for s in reversed(SEVERITIES)
                           if any(f.severity == s for f in every))
        text = (f"<AdviceReport {self.device_name}: {len(every)} finding{'s' if len(every) != 1 else ''}"
                f"{f' ({counts})' if counts else ''}, {self.total_saving_s * 1e3:.3g} ms to save of "
                f"{self.total_kernel_time_s * 1e3:.3g} ms kernel time")
        if self.findings:
            top = self.findings[0]
            text += f"; top: {top.rule_id} on {(top.subject or top.title)[:40]} ({top.est_saving_s * 1e3:.3g} ms)"
        return text + ">"

    def to_frame(self) -> pd.DataFrame:
        """The findings as a DataFrame, one row each in ranked order, shown ones first and those
        left out beyond the limits after them (`shown` False): nothing hidden."""
        columns = ["rule_id", "severity", "title", "subject", "est_saving_s", "measured_saving_s", "count",
                   "shown", "evidence", "recommendation", "docs"]
        rows = [[f.rule_id, f.severity, f.title, f.subject, float(f.est_saving_s),
                 math.nan if f.measured_saving_s is None else float(f.measured_saving_s), int(f.count), shown,
                 f.evidence, f.recommendation, f.docs]
                for shown, group in ((True, self.findings), (False, self.left_out)) for f in group]
        return pd.DataFrame(rows, columns=columns)

    def to_dict(self, fail_on: str | None = None) -> dict[str, Any]:
        return {
            "profile": self.profile_path,
            "device": self.device_name,
            "run_time_s": self.run_time_s,
            "total_kernel_time_s": self.total_kernel_time_s,
            "total_saving_s": self.total_saving_s,
            "iterations": self.iterations,  # the times are totals over these profiled iterations
            "fail_on": fail_on,
            "exit_code": exit_code(self, fail_on),
            "incomplete": self.incomplete or None,
            "rules": [r.id for r in self.rules],
            "omitted": dict(sorted(self.omitted.items())),
            "hidden": self.hidden,
            "hide_below_share": self.hide_below_share,
            "counts": {"findings": len(self.findings) + len(self.left_out), "instances": self.instances,
                       "shown": len(self.findings), "actions": len(self.actions), "notes": len(self.notes)},
            "findings": [f.to_dict() for f in self.findings],
            "not_shown": [f.to_dict() for f in self.left_out],
        }


def complete_table(kernels: pd.DataFrame) -> pd.DataFrame:
    """A copy with every contract column present (missing ones filled with their empty value)
    and a RangeIndex, so rules can index rows by position."""
    table = kernels.reset_index(drop=True).copy()
    for name, (kind, _) in KERNEL_COLUMNS.items():
        if name not in table.columns:
            table[name] = _DEFAULTS[kind]
    return table


def _amdahl_total(findings: list[Finding], kernels: pd.DataFrame, idle_s: float) -> float:
    """What all findings save together, never more than the time they touch.

    Each finding's kernel saving is spread over its rows in proportion to their time; on one row,
    savings s_i of several findings combine as t x (1 - prod(1 - s_i / t)) (each fix removes a
    share of what the others leave), so overlapping findings never add up past the row's time.
    Idle-time savings combine the same way against device_idle_s.
    """
    remaining: dict[int, float] = defaultdict(lambda: 1.0)  # row -> share of its time left
    idle_left = 1.0
    for f in findings:
        kernel_part = f.est_saving_s - f.idle_saving_s
        times = {r: float(kernels.at[r, "time_s"]) for r in f.rows if r < len(kernels)}
        weight = sum(times.values())
        for r, t in times.items():
            if weight > 0 and t > 0:
                remaining[r] *= max(0.0, 1.0 - min(1.0, kernel_part * (t / weight) / t))
        if idle_s > 0:
            idle_left *= max(0.0, 1.0 - min(1.0, f.idle_saving_s / idle_s))
    kernel_total = sum(float(kernels.at[r, "time_s"]) * (1.0 - left) for r, left in remaining.items())
    return kernel_total + (max(idle_s, 0.0) * (1.0 - idle_left))


def _cap(f: Finding, kernels: pd.DataFrame, idle_s: float) -> Finding:
    """No finding promises more than its kernels' time (plus the idle time it claims)."""
    rows_s = sum(float(kernels.at[r, "time_s"]) for r in f.rows if r < len(kernels))
    idle_part = min(f.idle_saving_s, max(idle_s, 0.0))
    limit = rows_s + idle_part
    if f.est_saving_s <= limit and f.idle_saving_s <= idle_part:
        return f
    return replace(f, est_saving_s=min(f.est_saving_s, limit), idle_saving_s=idle_part)


NOTE_SLOTS = 3  # of the shown findings, kept for notes when there are more actions than fit


def _select(ordered: list[Finding], thresholds: Thresholds) -> tuple[list[Finding], list[Finding], dict[str, int]]:
    """(shown, left out, rule id -> findings left out): at most max_findings_per_rule of one rule,
    then at most max_findings in all, up to NOTE_SLOTS of them notes (0 lifts a limit)."""
    per_rule_cap = thresholds.max_findings_per_rule
    per_rule: dict[str, int] = defaultdict(int)
    kept: list[Finding] = []
    left: list[Finding] = []
    for f in ordered:
        if per_rule_cap > 0 and per_rule[f.rule_id] >= per_rule_cap:
            left.append(f)
            continue
        per_rule[f.rule_id] += 1
        kept.append(f)
    if thresholds.max_findings > 0:
        actions = [f for f in kept if not is_note(f)]
        notes = [f for f in kept if is_note(f)]
        action_slots = max(thresholds.max_findings - min(len(notes), NOTE_SLOTS), 0)
        shown_actions = actions[:action_slots]
        shown_notes = notes[:max(thresholds.max_findings - len(shown_actions), 0)]
        left += actions[len(shown_actions):] + notes[len(shown_notes):]
        kept = shown_actions + shown_notes
    omitted: dict[str, int] = defaultdict(int)
    for f in left:
        omitted[f.rule_id] += 1
    return kept, sorted(left, key=reading_order), dict(omitted)


def with_verifications(report: AdviceReport, verified: dict[int, Verification]) -> AdviceReport:
    """The report with --verify's measurements (keyed by the finding's position) attached and the
    findings ranked again, measured savings first where measured. A finding whose fix measured no
    gain is demoted to info and says so in its evidence."""
    findings = []
    for n, f in enumerate(report.findings):
        v = verified.get(n)
        if v is not None and v.status == "no-gain":
            f = replace(f, severity="info" if f.severity != "info" and not RULES[f.rule_id].gate else f.severity,
                        evidence=f"{f.evidence} Verified on this GPU: no gain ({v.detail}).")
        findings.append(replace(f, verification=v) if v is not None else f)
    findings.sort(key=reading_order)
    return replace(report, findings=findings)


def _kept(findings: list[Finding], thresholds: Thresholds, run_time_s: float) -> tuple[list[Finding], int]:
    """The merged findings worth showing, downgraded to info when small; and the instances left
    out for saving less than hide_below_share of the run. Only a saving can be too small: findings
    that estimate none (gates, warnings about the numbers, "stop here") are always kept."""
    kept: list[Finding] = []
    hidden = 0
    for f in findings:
        if 0 < f.est_saving_s < thresholds.hide_below_share * run_time_s:
            hidden += f.count  # worth a microsecond: noise, not advice
            continue
        entry = RULES[f.rule_id]
        small = run_time_s <= 0 or f.est_saving_s < thresholds.min_saving_share * run_time_s
        if not entry.gate and not entry.keep_severity and small and f.severity == "warning":
            f = replace(f, severity="info")
        kept.append(f)
    return kept, hidden


def advise(profile: ProfileData, thresholds: Thresholds | None = None, profile_path: str = "") -> AdviceReport:
    """All enabled rules on one profile: findings capped, merged per pattern (one finding for a
    chain repeated in N layers), downgraded when small, actions ranked by saving before notes."""
    thresholds = thresholds or Thresholds()
    kernels = complete_table(profile.kernels)
    ctx = AdviceContext(kernels=kernels, summary=dict(profile.summary or {}), ceilings=profile.ceilings,
                        metadata=dict(profile.metadata or {}), thresholds=thresholds)
    idle_s = float(ctx.summary.get("device_idle_s") or 0.0)
    # a gate the user set runs whatever --select / --ignore say: they choose advice, not verdicts
    rules = [RULES[k] for k in sorted(RULES) if thresholds.runs(k) or _asked_gate(k, thresholds)]
    run_time_s = ctx.run_time_s
    raw = [located(_cap(f, kernels, idle_s), kernels) for entry in rules for f in entry.fn(ctx)]
    findings, hidden = _kept(merge_patterns(raw, kernels), thresholds, run_time_s)
    notes = merge_notes([f for f in findings if is_note(f)])
    ordered = sorted([f for f in findings if not is_note(f)] + notes, key=reading_order)
    shown, left_out, omitted = _select(ordered, thresholds)
    total = min(_amdahl_total(findings, kernels, idle_s), run_time_s) if run_time_s > 0 else 0.0
    return AdviceReport(findings=shown, rules=rules, run_time_s=run_time_s,
                        total_kernel_time_s=ctx.total_kernel_time_s, total_saving_s=total,
                        device_name=profile.ceilings.device_name, omitted=omitted,
                        profile_path=profile_path,
                        active_gates=tuple(r.id for r in rules
                                           if r.gate and getattr(thresholds, r.threshold) is not None),
                        incomplete=incomplete_reason(profile) or _unjudged_gate(ctx), hidden=hidden,
                        hide_below_share=thresholds.hide_below_share, left_out=left_out,
                        iterations=iterations_of(profile), source_root=_source_root(ctx.metadata))


def _source_root(metadata: dict[str, Any]) -> str:
    """The working directory the profile's source paths are relative to ('' when it kept none)."""
    info = metadata.get("source_lines")
    root = info.get("root") if isinstance(info, dict) else None
    return root if isinstance(root, str) else ""


def _asked_gate(rule_id: str, thresholds: Thresholds) -> bool:
    entry = RULES[rule_id]
    return entry.gate and getattr(thresholds, entry.threshold) is not None


def _unjudged_gate(ctx: AdviceContext) -> str:
    """Why a gate that was set cannot judge this profile ('' when every set gate can): the
    efficiency gate with no kernel of known cost, the launch gate without idle time and window."""
    limits = ctx.thresholds
    if limits.min_efficiency is not None:
        known = [usable(r) and float(r["time_s"]) > 0 for _, r in ctx.kernels.iterrows()]
        if not any(known):
            return "no kernel has a known cost and a time: its efficiency cannot be judged"
    if limits.max_launch_overhead is not None:
        idle, window = number_or_nan(ctx.summary.get("device_idle_s")), number_or_nan(ctx.summary.get("window_s"))
        if not (window > 0 and 0 <= idle <= window * 1.001):
            return "its summary has no usable device idle time and window: the launch overhead cannot be judged"
    return ""


def exit_code(report: AdviceReport, fail_on: str | None) -> int:
    """0 when no finding is at or above fail_on (or fail_on is None), else 1; 4 when a gate is
    asked of an incomplete profile (a failed run's or an empty one: no gate passes on it)."""
    if fail_on is None:
        return EXIT_OK
    if fail_on not in SEVERITIES:
        raise ValueError(f"fail_on must be one of {SEVERITIES}")
    if report.incomplete:
        return EXIT_INCOMPLETE
    level = severity_rank(fail_on)
    every = [*report.findings, *report.left_out]
    return EXIT_FINDINGS if any(severity_rank(f.severity) >= level for f in every) else EXIT_OK
