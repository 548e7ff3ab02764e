"""Rules about the device waiting or running half-empty: launch overhead, small grids."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rooflinectl.analysis.advice.common import (
    LONG_KERNEL_S,
    cell_float,
    cell_text,
    is_short_launch,
    sm_count,
    summary_float,
    time_per_call_s,
    usable,
    where,
)
from rooflinectl.analysis.advice.registry import AdviceContext, Finding, make_finding, rule
from rooflinectl.analysis.advice.rules_small_gemm import batchable_runs
from rooflinectl.schema import SHORT_LAUNCH_S
from rooflinectl.units import percent, seconds

# Kernel-to-kernel gap that remains inside a CUDA-graph replay (~1 us on Hopper-class GPUs).
GRAPH_GAP_S = 1.0e-6
MIN_IDLE_SHARE = 0.10  # idle share of the window from which the rule speaks
MIN_GRID_SHARE = 0.01


@rule(id="launch.overhead", title="Capture launches in a CUDA graph", severity="warning")
def launch_overhead(ctx: AdviceContext) -> list[Finding]:
    """The GPU sits idle between kernels (device_idle_s at least 10% of the window) while many
    kernels are short: the host cannot launch fast enough. Only the counted work speaks: the
    steady-state iterations of a script (setup, warm-up and compilation are left out), or its
    regions; idle time after host synchronisations is the host.sync rule's, not this one's, and
    the idle time inside runs of back-to-back same-shape GEMMs is gemm.batch-small's (one bmm
    removes those launches altogether; a graph would hide the same gaps: counted once) unless that
    rule is switched off.

    Estimate: a CUDA graph replays the launches with about GRAPH_GAP_S (1 us) between kernels,
    so the saving is idle - idle after syncs - idle in those runs - launches left x 1 us, capped at
    the idle time (the launches left: those outside the batchable runs, plus one bmm per run). The
    idle time is the one to expect without the profiler (device_idle_unprofiled_s: measured from
    the un-profiled steps of `--profile-steps`, the un-profiled step less the kernels' busy time
    per iteration; else the profiler's calibrated cost per recorded event taken out), since the
    profiler slows the host that launches the kernels. Kernel time is
    not counted: graphs do not make kernels faster (fusing them is the fusion rule's saving).
    Measured (the default sampling's un-profiled steps, or function mode's plain calls): idle per
    step = un-profiled step - kernel busy per step, and the 10% bar is held against the
    un-profiled window (busy + that idle). Calibrated (no step timed without the profiler): the
    saving is an estimate, said so with its
    range, and given as a zero-saving note (numbers["estimated_saving_s"]) so that it never ranks
    above a finding from measured times (the calibration overstated the H200's measured savings
    1.5-15x, issue 28).
    """
    if not ctx.on_gpu:
        return []
    idle_s = summary_float(ctx, "device_idle_s")
    window_s = summary_float(ctx, "window_s")
    if idle_s is None or not window_s or idle_s <= 0 or idle_s / window_s < MIN_IDLE_SHARE:
        return []
    idle = _graphable_idle(ctx, idle_s, window_s)
    if idle is None:
        return []
    launches, short = _launch_counts(ctx)
    launches_left = launches - sum(r.launches - sum(r.lengths.values()) for r in idle.batched)
    saving_s = min(idle.graphable_s, max(0.0, idle.graphable_s - launches_left * GRAPH_GAP_S))
    if saving_s <= 0:  # the gaps are already what a graph replay leaves (e.g. the run uses graphs)
        return []
    return [_launch_finding(ctx, idle, idle_s, window_s, launches, short, saving_s)]


@dataclass
class _Idle:
    """The idle time a CUDA graph could take away, and what is taken out of it first."""

    expected_s: float  # the idle time to expect without the profiler
    unprofiled_s: float | None  # the summary's device_idle_unprofiled_s
    source: str | None  # how that was had: "measured" (un-profiled steps) or "calibration"
    sync_s: float  # idle after host synchronisations: host.sync's, and a graph cannot hold a sync
    runs_s: float  # idle inside runs of back-to-back same-shape GEMMs: gemm.batch-small's
    batched: list[Any]  # those runs (rules_small_gemm.batchable_runs)

    @property
    def graphable_s(self) -> float:
        return self.expected_s - self.sync_s - self.runs_s


def _graphable_idle(ctx: AdviceContext, idle_s: float, window_s: float) -> _Idle | None:
    """The idle time left for a graph to remove, or None when it is under MIN_IDLE_SHARE of the
    window (measured: of the un-profiled window, busy + its idle)."""
    unprofiled_s = summary_float(ctx, "device_idle_unprofiled_s")
    expected_idle_s = idle_s if unprofiled_s is None else min(unprofiled_s, idle_s)
    source = ctx.summary.get("device_idle_unprofiled_source")
    bar_window_s = window_s  # measured: the window the un-profiled steps take (busy + their idle)
    if source == "measured":
        bar_window_s = min(window_s, (summary_float(ctx, "device_busy_s") or 0.0) + expected_idle_s) or window_s
    sync_idle_s = min(summary_float(ctx, "host_sync_idle_s") or 0.0, expected_idle_s)
    batched = [r for r in batchable_runs(ctx) if r.saving_s > 0] if ctx.thresholds.runs("gemm.batch-small") else []
    runs_idle_s = min(sum(r.idle_saving_s for r in batched), expected_idle_s - sync_idle_s)
    idle = _Idle(expected_idle_s, unprofiled_s, source, sync_idle_s, runs_idle_s, batched)
    return None if idle.graphable_s < MIN_IDLE_SHARE * bar_window_s else idle


def _launch_counts(ctx: AdviceContext) -> tuple[float, float]:
    """(launches, launches shorter than SHORT_LAUNCH_S) in the counted work."""
    launches = summary_float(ctx, "launches") or float(ctx.kernels["calls"].sum())
    short = summary_float(ctx, "short_launches")
    if short is None:
        short_rows = ctx.kernels[[is_short_launch(r) for _, r in ctx.kernels.iterrows()]]
        short = float(short_rows["calls"].sum()) if len(short_rows) else 0.0
    return launches, short


def _launch_finding(ctx: AdviceContext, idle: _Idle, idle_s: float, window_s: float, launches: float, short: float,
                    saving_s: float) -> Finding:
    """The finding, its evidence in the user's numbers; a calibrated saving is a zero-saving note."""
    calibrated = idle.source == "calibration"
    per_launch_s = window_s / launches if launches else 0.0
    estimate = "" if not calibrated else (f" Saving: an estimate, between 0 and {seconds(saving_s, decimals=2)} (the profiled "
                                          "idle less the profiler's calibrated cost; measured steps were 1.5-15x lower on the "
                                          "H200): not ranked; the default sampling or FILE.py:FUNCTION measures it.")
    return make_finding(
        "launch.overhead",
        evidence=(f"The GPU was idle {seconds(idle_s, decimals=2)} of a {seconds(window_s, decimals=2)} window "
                  f"({percent(idle_s / window_s)}) across {int(launches)} launches "
                  f"({int(short)} shorter than {SHORT_LAUNCH_S * 1e6:.0f} us); "
                  f"one launch every {seconds(per_launch_s, decimals=2)}"
                  + _unprofiled_words(ctx, idle.unprofiled_s, idle.expected_s)
                  + _host_causes(ctx)
                  + (f"; {seconds(idle.runs_s, decimals=2)} of the idle time is inside runs of back-to-back "
                     "same-shape GEMMs: gemm.batch-small's saving (one bmm per run), not counted here"
                     if idle.runs_s > 0 else "") + "." + estimate),
        recommendation=("Capture the step in a CUDA graph: torch.compile(model, mode=\"reduce-overhead\"), "
                        "or torch.cuda.graphs / torch.cuda.make_graphed_callables with static input "
                        "buffers; also batch more work per call if you can."),
        est_saving_s=0.0 if calibrated else saving_s,
        rows=(),
        numbers={"device_idle_s": idle_s, "device_idle_unprofiled_s": idle.expected_s, "window_s": window_s,
                 "launches": launches, "short_launches": short, "host_sync_idle_s": idle.sync_s,
                 "batch_runs_idle_s": idle.runs_s, **({"estimated_saving_s": saving_s} if calibrated else {})},
        subject="launches",
        idle_saving_s=0.0 if calibrated else saving_s,
    )


def _unprofiled_words(ctx: AdviceContext, unprofiled_s: float | None, expected_idle_s: float) -> str:
    """How much of the idle time remains without the profiler, and how that is known."""
    if unprofiled_s is None:
        return ""
    if ctx.summary.get("device_idle_unprofiled_source") == "measured":
        return (f"; the steps timed without the profiler (un-profiled step - kernel busy per step) leave about "
                f"{seconds(expected_idle_s, decimals=2)} idle over these iterations")
    return (f"; without the profiler's own cost per event, about {seconds(expected_idle_s, decimals=2)} idle "
            "(an estimate: no step was timed without the profiler)")


def _host_causes(ctx: AdviceContext) -> str:
    """Where the host's time went, as the summary saw it: outside any op (Python), in syncs."""
    window_s = summary_float(ctx, "window_s") or 0.0
    parts = []
    outside_s = summary_float(ctx, "host_outside_ops_s")
    if outside_s and window_s:
        parts.append(f"the host spent {seconds(outside_s, decimals=2)} ({percent(outside_s / window_s)}) "
                     "outside any op (Python between launches)")
    sync_idle_s = summary_float(ctx, "host_sync_idle_s")
    if sync_idle_s:
        parts.append(f"{seconds(sync_idle_s, decimals=2)} of the idle time follows host synchronisations "
                     "(see host.sync; not counted here)")
    return "; " + "; ".join(parts) if parts else ""


PERSISTENT_GRID_SHARE = 0.8  # blocks / SMs from which a library kernel is taken as persistent


@rule(id="grid.small", title="Launch more blocks than SMs", severity="warning")
def small_grid(ctx: AdviceContext) -> list[Finding]:
    """A long kernel (>= 20 us per call, >= 1% of kernel time) launched with fewer thread blocks
    than the GPU has SMs: part of the chip does nothing. Collectives are left out (NCCL runs
    one block per channel by design; the link bounds them), and so are library GEMMs whose grid
    is nearly one block per SM (cuBLAS's persistent nvjet kernels launch 112 or 128 blocks on
    the H200's 132 SMs and loop over their tiles: the grid says nothing of the work split).

    Estimate: with enough blocks the kernel would run blocks/SMs of its time, but never below
    its roof: saving = min(time x (1 - blocks / SMs), headroom_s).
    """
    sms = sm_count(ctx)
    if not ctx.on_gpu or not sms or "blocks" not in ctx.kernels.columns:
        return []
    total_s = ctx.total_kernel_time_s
    findings: list[Finding] = []
    for i, row in ctx.kernels.iterrows():
        blocks = cell_float(row, "blocks")
        time_s = cell_float(row, "time_s", 0.0)
        if blocks != blocks or blocks <= 0 or blocks >= sms or not usable(row) or cell_text(row, "op_family") == "collective":
            continue  # NCCL sizes its grid by channels on purpose: a collective is held against the link
        if time_per_call_s(row) < LONG_KERNEL_S or not total_s or time_s / total_s < MIN_GRID_SHARE:
            continue
        if cell_text(row, "origin") == "library" and blocks >= PERSISTENT_GRID_SHARE * sms:
            continue  # a persistent library kernel: one block per SM (cluster-rounded), looping over tiles
        headroom_s = cell_float(row, "headroom_s", time_s)
        saving_s = min(time_s * (1.0 - blocks / sms), headroom_s)
        family = cell_text(row, "op_family")
        if family == "gemm":
            fix = ("Split the reduction dimension (split-K / stream-K): torch.compile(mode=\"max-autotune\") "
                   "tries split-K configs; in Triton, add a SPLIT_K axis to the grid.")
        else:
            fix = ("Give the grid more blocks: smaller BLOCK sizes, one program per row tile, or split "
                   "the reduction across blocks with a second pass.")
        findings.append(make_finding(
            "grid.small",
            evidence=(f"{where(row)} runs {blocks:.0f} blocks on {sms} SMs for "
                      f"{seconds(time_per_call_s(row), decimals=2)} per call ({percent(time_s / total_s)} of kernel time)."),
            recommendation=fix,
            est_saving_s=saving_s,
            rows=(int(i),),
            numbers={"blocks": blocks, "sms": float(sms), "time_s": time_s},
            subject=cell_text(row, "kernel") or cell_text(row, "op"),
        ))
    return findings
