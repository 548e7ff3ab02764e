"""The advice-rule registry: one decorator, one entry per rule id, duplicates refused.

A rule is a pure function `fn(ctx: AdviceContext) -> list[Finding]`: it reads the analysed
kernel table (plus the run summary, the ceilings and the metadata) and returns findings. It never
prints, plots or reads files. Its docstring is its documentation, and says how its estimate is
made: `rooflinectl advise --explain RULE_ID` prints it, docs/advice.md holds the same text
(cli/rule_docs.py), and every finding links that page's section for the installed version.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from rooflinectl._version import __version__
from rooflinectl.ceilings.model import Ceilings
from rooflinectl.profile_sections import RunMetadata, Summary

SEVERITIES: tuple[str, ...] = ("info", "warning", "error")
DOCS_REPOSITORY = "https://github.com/rooflinectl/rooflinectl"
DOCS_PAGE = "docs/advice.md"  # its `## Rules` section is generated from the rules' docstrings (scripts/advice_docs.py)


def docs_ref(version: str = __version__) -> str:
    """The git ref whose docs match this installed version: its release tag `v{version}`, so that
    a link in a report written today still shows the rule as this version applied it after `main`
    moves on; a development build (`0.2.0.dev3`, `0.1.0+g1234`) has no tag of its own: `main`."""
    return f"v{version}" if re.fullmatch(r"\d+(\.\d+)*((a|b|rc)\d+)?(\.post\d+)?", version) else "main"


def docs_anchor(rule_id: str) -> str:
    """The anchor GitHub gives the heading `### {rule_id}`: lower case, punctuation other than `-`
    and `_` dropped (`fusion.memory-chain` -> `fusionmemory-chain`)."""
    return re.sub(r"[^\w\- ]", "", rule_id.lower()).replace(" ", "-")


def docs_url(rule_id: str, version: str = __version__) -> str:
    """Where a rule's documentation is online, for this installed version (offline, the same text:
    `rooflinectl advise --explain RULE_ID`)."""
    return f"{DOCS_REPOSITORY}/blob/{docs_ref(version)}/{DOCS_PAGE}#{docs_anchor(rule_id)}"


def severity_rank(severity: str) -> int:
    """info < warning < error; an unknown name is a programming error."""
    return SEVERITIES.index(severity)


@dataclass(frozen=True)
class Thresholds:
    """CI thresholds and knobs; None switches a gate off. Read from flags and [tool.rooflinectl]."""

    min_efficiency: float | None = None  # time-weighted efficiency of the known-cost kernels
    max_unknown_share: float | None = None  # share of kernel time with no cost model
    max_launch_overhead: float | None = None  # device idle time / window
    min_saving_share: float = 0.01  # findings saving less than this share of the run become info
    hide_below_share: float = 0.001  # fixes saving less than this share of the run are left out (counted)
    max_findings_per_rule: int = 5  # 0: no limit
    max_findings: int = 10  # shown in all (actions, then notes); 0: no limit (--all)
    disabled_rules: tuple[str, ...] = ()  # rule ids or prefixes (`fusion`) not to run
    selected_rules: tuple[str, ...] = ()  # rule ids or prefixes to run, all when empty

    def runs(self, rule_id: str) -> bool:
        """Whether the rule runs under --select / --ignore (an id, or a prefix before a dot)."""
        def matches(patterns: tuple[str, ...]) -> bool:
            return any(rule_id == p or rule_id.startswith(p.rstrip(".") + ".") for p in patterns)

        return (not self.selected_rules or matches(self.selected_rules)) and not matches(self.disabled_rules)


@dataclass
class AdviceContext:
    """What a rule sees: the analysed table (RangeIndex = row positions), summary, roofs, metadata."""

    kernels: pd.DataFrame
    summary: Summary
    ceilings: Ceilings
    metadata: RunMetadata
    thresholds: Thresholds = field(default_factory=Thresholds)

    @property
    def total_kernel_time_s(self) -> float:
        value = self.summary.get("total_kernel_time_s")
        if value is None or value != value:  # None or NaN
            return float(self.kernels["time_s"].sum()) if len(self.kernels) else 0.0
        return float(value)

    @property
    def run_time_s(self) -> float:
        """The time the run's verdict is measured against: the window, else the kernel time."""
        window = self.summary.get("window_s")
        if window is not None and window == window and float(window) > 0:
            return max(float(window), self.total_kernel_time_s)
        return self.total_kernel_time_s

    @property
    def on_gpu(self) -> bool:
        return self.ceilings.device_kind == "cuda"


@dataclass(frozen=True)
class Verification:
    """What `advise --verify` measured for a finding: its op rebuilt with the profiled shapes and
    dtype, timed as profiled and with the fix on the same GPU (rooflinectl.verify)."""

    status: str  # "gain", "no-gain", or "not-run" (detail says why)
    detail: str  # what was built and timed, or why it was not
    measured_saving_s: float | None = None  # the rebuilt work's profiled time x (1 - fixed / original)
    original_s: float | None = None  # median per call of the rebuilt op(s) as profiled
    fixed_s: float | None = None  # the same with the fix

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "detail": self.detail, "measured_saving_s": self.measured_saving_s,
                "original_s": self.original_s, "fixed_s": self.fixed_s}


@dataclass(frozen=True)
class Finding:
    """One recommendation with its evidence and the time it would save (seconds, Amdahl-capped)."""

    rule_id: str
    title: str
    severity: str
    evidence: str
    recommendation: str
    est_saving_s: float
    rows: tuple[int, ...] = ()
    numbers: dict[str, float] = field(default_factory=dict)
    subject: str = ""  # the op / module / kernel the finding is about, for annotations
    idle_saving_s: float = 0.0  # the part of est_saving_s that is device idle time, not kernel time
    docs: str = ""
    verification: Verification | None = None  # set by `advise --verify`
    count: int = 1  # the instances this finding stands for (the same pattern in repeated modules)
    instances: tuple[Finding, ...] = ()  # those instances, first (lowest module index) first; () for one
    source: str = ""  # the user's source line of its rows, 'path:line' (analysis/advice/location.py), '' if none
    source_function: str = ""  # that line's function
    source_call: str = ""  # the torch call made there (through a library function)
    sequence: tuple[int, ...] = ()  # the rows in launch order, a row as often as it launched; () unknown

    @property
    def measured_saving_s(self) -> float | None:
        """The saving --verify measured, None when the finding was not verified."""
        v = self.verification
        return v.measured_saving_s if v is not None and v.status in ("gain", "no-gain") else None

    @property
    def ranked_saving_s(self) -> float:
        """The saving findings are ranked by: the measured one where --verify measured it."""
        measured = self.measured_saving_s
        return self.est_saving_s if measured is None else measured

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule_id": self.rule_id,
            "title": self.title,
            "severity": self.severity,
            "subject": self.subject,
            "evidence": self.evidence,
            "numbers": {k: float(v) for k, v in sorted(self.numbers.items())},
            "recommendation": self.recommendation,
            "est_saving_s": float(self.est_saving_s),
            "rows": [int(r) for r in self.rows],
            **({"sequence": [int(r) for r in self.sequence]} if self.sequence else {}),
            "docs": self.docs,
            "verification": self.verification.to_dict() if self.verification is not None else None,
            "count": self.count,
            "instances": [f.to_dict() for f in self.instances],
            "source": self.source,
            "source_function": self.source_function,
            "source_call": self.source_call,
        }


RuleFn = Callable[[AdviceContext], list[Finding]]


@dataclass(frozen=True)
class Rule:
    id: str
    title: str
    severity: str
    fn: RuleFn
    doc: str
    gate: bool = False  # a CI gate (active only when its threshold is set), not a fix
    threshold: str = ""  # for gates: the Thresholds field that switches it on
    keep_severity: bool = False  # a warning about the data itself: not downgraded for a small saving

    @property
    def docs_url(self) -> str:
        return docs_url(self.id)

    @property
    def paragraphs(self) -> list[str]:
        """Its docstring as paragraphs, each on one line: a blank line, and each sentence that
        starts with `Estimate:`, begin a new one (the docs and `--explain` show them so)."""
        paragraphs: list[list[str]] = [[]]
        for line in (raw.strip() for raw in self.doc.splitlines()):
            for n, piece in enumerate(re.split(r"(?<=[.:)]) (?=Estimate:)", line)):
                if not piece or n > 0 or piece.startswith("Estimate:"):
                    paragraphs.append([])
                if piece:
                    paragraphs[-1].append(piece)
        return [" ".join(p) for p in paragraphs if p]


RULES: dict[str, Rule] = {}


def rule(*, id: str, title: str, severity: str, threshold: str = "",
         keep_severity: bool = False) -> Callable[[RuleFn], RuleFn]:
    """Register an advice rule under a unique id; a second registration of the id is refused.

    A rule with a threshold (a Thresholds field name) is a CI gate, active only when it is set.
    keep_severity: the rule warns about the data (its findings save nothing), so the engine does
    not turn its warnings into info for their small saving.
    """
    if severity not in SEVERITIES:
        raise ValueError(f"rule {id!r}: severity must be one of {SEVERITIES}, not {severity!r}")
    if threshold and threshold not in Thresholds.__dataclass_fields__:
        raise ValueError(f"rule {id!r}: unknown threshold {threshold!r}")

    def register(fn: RuleFn) -> RuleFn:
        if id in RULES:
            raise ValueError(f"advice rule {id!r} is already registered (by {RULES[id].fn.__module__})")
        doc = (fn.__doc__ or "").strip()
        if not doc:
            raise ValueError(f"advice rule {id!r} has no docstring: every rule documents its estimate")
        RULES[id] = Rule(id=id, title=title, severity=severity, fn=fn, doc=doc,
                         gate=bool(threshold), threshold=threshold, keep_severity=keep_severity)
        return fn

    return register


def make_finding(
    rule_id: str,
    *,
    evidence: str,
    recommendation: str,
    est_saving_s: float,
    rows: tuple[int, ...] | list[int] = (),
    numbers: dict[str, float] | None = None,
    subject: str = "",
    idle_saving_s: float = 0.0,
    severity: str | None = None,
    sequence: tuple[int, ...] | list[int] = (),
) -> Finding:
    """Build a finding of a registered rule, taking its title, severity and docs from the registry."""
    entry = RULES[rule_id]
    return Finding(
        rule_id=rule_id,
        title=entry.title,
        severity=severity or entry.severity,
        evidence=evidence,
        recommendation=recommendation,
        est_saving_s=max(0.0, float(est_saving_s)),
        rows=tuple(sorted({int(r) for r in rows})),
        numbers=dict(numbers or {}),
        subject=subject,
        idle_saving_s=max(0.0, float(idle_saving_s)),
        docs=entry.docs_url,
        sequence=tuple(int(r) for r in sequence),
    )
