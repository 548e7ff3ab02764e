"""CI gates: whole-run thresholds, active only when their threshold is set (flag or pyproject)."""

from __future__ import annotations

from rooflinectl.analysis.advice.common import usable
from rooflinectl.analysis.advice.registry import AdviceContext, Finding, make_finding, rule
from rooflinectl.units import percent, seconds


def _gate(rule_id: str, value: float, limit: float, *, floor: bool = False, evidence: str,
          recommendation: str, number: str, subject: str) -> list[Finding]:
    """The gate's finding when value crossed limit (fell below it for a floor, rose above it
    otherwise), else none. evidence gets "; the threshold is <limit>." appended."""
    if (value >= limit) if floor else (value <= limit):
        return []
    return [make_finding(
        rule_id,
        evidence=f"{evidence}; the threshold is {percent(limit)}.",
        recommendation=recommendation,
        est_saving_s=0.0,
        numbers={number: value, "threshold": float(limit)},
        subject=subject,
    )]


@rule(id="gate.min-efficiency", title="Efficiency below the CI threshold", severity="error", threshold="min_efficiency")
def min_efficiency(ctx: AdviceContext) -> list[Finding]:
    """Time-weighted efficiency of the kernels with a known cost, sum(roof_time_s) / sum(time_s),
    below --min-efficiency. Estimate: none (a verdict, not a fix)."""
    limit = ctx.thresholds.min_efficiency
    if limit is None:
        return []
    known = ctx.kernels[[usable(r) for _, r in ctx.kernels.iterrows()]] if len(ctx.kernels) else ctx.kernels
    time_s = float(known["time_s"].sum()) if len(known) else 0.0
    if time_s <= 0:
        return []
    eff = float(known["roof_time_s"].fillna(0.0).sum()) / time_s
    return _gate(
        "gate.min-efficiency", eff, limit, floor=True,
        evidence=f"kernels with a known cost ran at {percent(eff)} of their roofs over {seconds(time_s, decimals=2)}",
        recommendation="Act on the findings above, or lower min_efficiency in [tool.rooflinectl] if the threshold is too strict.",
        number="efficiency",
        subject="efficiency",
    )


@rule(id="gate.unknown-share", title="Too much kernel time without a cost model", severity="error", threshold="max_unknown_share")
def unknown_share(ctx: AdviceContext) -> list[Finding]:
    """Share of kernel time whose FLOPs and bytes no formula covered (summary unknown_time_share,
    else the time of rows with cost_source none) above --max-unknown-share. Estimate: none."""
    limit = ctx.thresholds.max_unknown_share
    if limit is None:
        return []
    share = ctx.summary.get("unknown_time_share")
    if share is None or share != share:
        total_s = ctx.total_kernel_time_s
        unknown_s = float(ctx.kernels.loc[ctx.kernels["cost_source"].isin(["none", ""]), "time_s"].sum())
        share = unknown_s / total_s if total_s else 0.0
    share = float(share)
    return _gate(
        "gate.unknown-share", share, limit,
        evidence=f"{percent(share)} of kernel time has no cost model (cost_source none)",
        recommendation="Add cost formulas for the ops whose rows show cost_source none (`rooflinectl show --format csv`), or return a cost from Triton kernels through launch_metadata.",
        number="unknown_share",
        subject="unknown cost",
    )


@rule(id="gate.launch-overhead", title="Device idle share above the CI threshold", severity="error", threshold="max_launch_overhead")
def launch_overhead_gate(ctx: AdviceContext) -> list[Finding]:
    """device_idle_s / window_s above --max-launch-overhead. Estimate: none (launch.overhead
    estimates what CUDA graphs would save)."""
    limit = ctx.thresholds.max_launch_overhead
    idle, window = ctx.summary.get("device_idle_s"), ctx.summary.get("window_s")
    if limit is None or idle is None or not window:
        return []
    share = float(idle) / float(window)
    return _gate(
        "gate.launch-overhead", share, limit,
        evidence=f"the device was idle {percent(share)} of the window ({seconds(float(idle), decimals=2)} of {seconds(float(window), decimals=2)})",
        recommendation=("Capture the step in a CUDA graph (see launch.overhead), or raise max_launch_overhead."
                        if ctx.on_gpu else "Do more work per op (larger batches, fewer small ops; torch.compile "
                        "fuses small ops on CPU too), or raise max_launch_overhead."),
        number="idle_share",
        subject="launch overhead",
    )
