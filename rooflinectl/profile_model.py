"""The profile model: what a profile holds in memory (kernel table, ceilings, metadata, summary).

A core type that every stage may import: the pipeline builds it, analysis reads it, outputs
render it. Reading and writing the file is an output (rooflinectl/outputs/profile_file.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from rooflinectl.ceilings.model import Ceilings
from rooflinectl.profile_sections import RunMetadata, Summary


@dataclass
class ProfileData:
    """A profile in memory.

    kernels: one row per kernel group, columns as schema.KERNEL_COLUMNS documents them;
    ceilings: the roofs the rows were placed against, each with its source;
    metadata: tool and library versions, command, device, math modes, completed or not
    (profile_sections.RunMetadata);
    summary: whole-run figures (schema.SUMMARY_KEYS; typed as profile_sections.Summary);
    setup_kernels: the same columns for the work outside the steady state (weight upload, warm-up,
    compilation, teardown), kept apart from the table and the advice; empty when all is counted.
    """

    kernels: pd.DataFrame
    ceilings: Ceilings
    metadata: RunMetadata = field(default_factory=dict)  # type: ignore[assignment]
    summary: Summary = field(default_factory=dict)  # type: ignore[assignment]
    setup_kernels: pd.DataFrame | None = None


MAX_ITERATIONS = 1e9  # more iterations than any profiled run: a count beyond it is not one


def incomplete_reason(profile: ProfileData) -> str:
    """Why the profile cannot pass a gate ('' when it can): its run failed (completed false, or a
    non-zero exit code without completed), it holds no kernels, no summary, an iteration count
    that is not one, or kernel times that are all zero or not finite: numbers no gate can judge."""
    meta = profile.metadata or {}
    code = meta.get("exit_code")
    failed_code = code not in (None, 0, False)
    if meta.get("completed") is False or (meta.get("completed") is not True and failed_code):
        return "its run did not complete" + (f" (exit code {code})" if failed_code else "")
    if profile.kernels is None or len(profile.kernels) == 0:
        return "it recorded no kernels"
    if not profile.summary:
        return "it has no summary: its whole-run figures cannot be judged"
    iterations = profile.summary.get("iterations")
    if iterations is not None and not (isinstance(iterations, (int, float)) and not isinstance(iterations, bool)
                                       and 1 <= iterations <= MAX_ITERATIONS and float(iterations).is_integer()):
        return f"its iteration count {iterations!r} is not a count of iterations"
    total_s = pd.to_numeric(profile.kernels.get("time_s", pd.Series(dtype=float)), errors="coerce").sum()
    if not (total_s > 0 and total_s < float("inf")):
        return "its kernel times are all zero (or not finite): nothing to compare"
    return ""


def stale_window(summary: Summary) -> bool:
    """True when the device was busy longer than the window, which cannot be: the window was measured
    on the host (rooflinectl before 2026-11-29), so it is no figure to show or compare."""
    window, busy = summary.get("window_s"), summary.get("device_busy_s")
    return isinstance(window, (int, float)) and isinstance(busy, (int, float)) and busy > window * 1.001 + 1e-9


def iterations_of(profile: ProfileData) -> float:
    """How many iterations the profile's times cover (summary "iterations", at least 1).

    Two profiles compare per iteration: divide totals by this.
    """
    try:
        return max(1.0, float(profile.summary.get("iterations") or 1))
    except (TypeError, ValueError):
        return 1.0
