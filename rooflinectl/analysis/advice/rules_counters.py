"""Rules that need counters (`profile --counters ncu`): what the hardware executed and moved,
against the useful work and the minimum traffic the cost model counts.

They read the measured columns (schema.COUNTER_COLUMNS) and stay silent on rows without them.
Byte rules skip kernels under 8 MiB of minimum traffic per call: there, writes that are still in
the 60 MiB L2 when the kernel ends are not counted by ncu, and DRAM bytes say little.
"""

from __future__ import annotations

import math

import pandas as pd

from rooflinectl.analysis.advice.common import (
    MATH_FAMILIES,
    cell_float,
    cell_text,
    dram_bytes_per_s,
    is_short_launch,
    where,
)
from rooflinectl.analysis.advice.registry import AdviceContext, Finding, make_finding, rule
from rooflinectl.units import percent, si

WASTED_FLOPS_RATIO = 1.1  # executed / useful FLOPs above this: padded or repeated work
REREAD_RATIO = 1.5  # DRAM bytes / minimum bytes above this: data read more than once
REUSE_RATIO = 4.0  # cache-level bytes / DRAM-level bytes above this: poor reuse
LEVEL_TIME_SHARE = 0.5  # ... and that traffic at its roof takes at least half the kernel's time
MIN_BYTES_PER_CALL = 8 * 2**20
L2_RESIDENT_BANDWIDTH = 0.8  # achieved minimum-traffic bandwidth / DRAM roof above this


def _measured(ctx: AdviceContext) -> list[tuple[int, pd.Series]]:
    """Rows with counters and an analytic cost (the comparison needs both)."""
    k = ctx.kernels
    if "measured_launches" not in k.columns:
        return []
    return [(int(i), r) for i, r in k.iterrows()
            if cell_float(r, "measured_launches", 0.0) > 0 and cell_text(r, "cost_source") not in ("", "none", "ncu")]


def _by_op(ctx: AdviceContext) -> list[tuple[tuple[int, ...], pd.Series]]:
    """The measured rows summed per op call (op, shapes, dtype, module): one op's cost is split
    among its kernels by duration (attribution), so a split-K GEMM's main kernel alone "executes"
    more than its share; compared per op, the split cancels. Ops with an unmeasured kernel are
    left out."""
    measured = dict(_measured(ctx))
    k = ctx.kernels
    out = []
    keys = ["op", "shapes", "dtype", "module"]
    for _, group in k.groupby(keys, sort=False, dropna=False):
        rows = tuple(int(i) for i in group.index)
        if not all(i in measured for i in rows):
            continue
        lead = group.loc[group["time_s"].idxmax()].copy()
        for column in ("flops", "measured_flops", "bytes", "dram_bytes", "time_s"):
            lead[column] = float(group[column].sum())
        lead["calls"] = float(group["calls"].max())
        lead["measured_precision"] = group.loc[group["measured_flops"].idxmax(), "measured_precision"]
        out.append((rows, lead))
    return out


def _peak(ctx: AdviceContext, roof_key: str) -> float:
    roof = ctx.ceilings.compute_flops_per_s.get(roof_key)
    return float(roof.value) if roof else math.nan


def _executed_compute_bound(ctx: AdviceContext, row: pd.Series) -> bool:
    """Do the executed FLOPs, at their roof, take longer than the DRAM bytes at theirs?"""
    peak, bw = _peak(ctx, cell_text(row, "measured_precision")), dram_bytes_per_s(ctx)
    flops_s = cell_float(row, "measured_flops", 0.0) / peak if peak > 0 else 0.0
    bytes_s = cell_float(row, "dram_bytes", 0.0) / bw if bw > 0 else 0.0
    return flops_s >= bytes_s


@rule(id="counters.wasted-flops", title="The kernel executes more FLOPs than the work needs", severity="warning")
def wasted_flops(ctx: AdviceContext) -> list[Finding]:
    """A GEMM, convolution or attention op whose kernels execute 1.1x or more its useful FLOPs
    (executed: ncu; useful: the cost model; summed over the op's kernels): padded tiles (a
    dimension that is not a multiple of the tile), masked work computed anyway (causal attention
    without a causal kernel), or recomputation.

    Estimate: when the executed work bounds the kernels (compute-bound on the measured numbers),
    the extra work's share of their time: time x (1 - useful / executed); else none (info).
    """
    findings = []
    for rows, row in _by_op(ctx):
        useful, executed = cell_float(row, "flops", 0.0), cell_float(row, "measured_flops", 0.0)
        if cell_text(row, "op_family") not in MATH_FAMILIES or useful <= 0 or executed < WASTED_FLOPS_RATIO * useful:
            continue
        time_s = cell_float(row, "time_s", 0.0)
        bound = _executed_compute_bound(ctx, row)
        findings.append(make_finding(
            "counters.wasted-flops",
            evidence=(f"{where(row)} executes {executed / useful:.2f}x its useful FLOPs ({si(executed, 'FLOP')} run, "
                      f"{si(useful, 'FLOP')} needed), on {cell_text(row, 'measured_precision') or '?'}."),
            recommendation=("Make the dimensions multiples of the kernel's tile (64 or 128; pad once outside the "
                            "loop, e.g. the vocabulary or the batch x sequence), use a causal attention kernel "
                            "(is_causal=True) instead of a mask, and check nothing is recomputed."),
            est_saving_s=time_s * (1.0 - useful / executed) if bound else 0.0,
            severity=None if bound else "info",
            rows=rows, numbers={"executed_over_useful": executed / useful, "time_s": time_s},
            subject=cell_text(row, "kernel"),
        ))
    return findings


@rule(id="counters.dram-rereads", title="The kernel reads its data from DRAM more than once", severity="warning")
def dram_rereads(ctx: AdviceContext) -> list[Finding]:
    """A memory-bound op (8 MiB or more of minimum traffic per call) whose kernels' DRAM bytes (ncu,
    cold caches) are 1.5x or more the minimum (each input read once, each output written once):
    its tiles do not reuse what they load, or a strided or transposed operand is read by lines it
    only partly uses.

    Estimate: at the minimum traffic the memory-bound kernels save time x (1 - minimum / measured).
    """
    findings = []
    for rows, row in _by_op(ctx):
        minimum, dram = cell_float(row, "bytes", 0.0), cell_float(row, "dram_bytes", 0.0)
        calls = max(1.0, cell_float(row, "calls", 1.0))
        if cell_text(row, "bound") != "memory" or minimum / calls < MIN_BYTES_PER_CALL or dram < REREAD_RATIO * minimum:
            continue
        time_s = cell_float(row, "time_s", 0.0)
        findings.append(make_finding(
            "counters.dram-rereads",
            evidence=(f"{where(row)} moves {dram / minimum:.2f}x the minimum DRAM traffic ({si(dram, 'B')} measured, "
                      f"{si(minimum, 'B')} needed)."),
            recommendation=("Reuse what each block loads (tile through shared memory, loop over the reused dimension "
                            "inside the kernel), fuse the producer or consumer so the tensor is not read again, and make "
                            "the contiguous dimension the one threads walk (a .contiguous() copy once can be cheaper)."),
            est_saving_s=time_s * (1.0 - minimum / dram),
            rows=rows, numbers={"dram_over_minimum": dram / minimum, "time_s": time_s},
            subject=cell_text(row, "kernel"),
        ))
    return findings


@rule(id="counters.poor-reuse", title="Cache traffic far above DRAM traffic: poor reuse or uncoalesced access",
      severity="warning")
def poor_reuse(ctx: AdviceContext) -> list[Finding]:
    """A kernel (>= 5 us per call) that moves 4x or more bytes through L2 than from DRAM, or through
    L1 than through L2, where that traffic at the level's roof takes at least half its time: the
    same lines are fetched again and again (no reuse in registers or shared memory), or a warp's
    accesses are scattered so each request moves whole sectors it mostly discards.

    Estimate: with the traffic down to the level below (the ratio gone), the level's time shrinks
    by 1 - 1/ratio: saving = min(level time x (1 - 1/ratio), time - roof time).
    """
    findings = []
    for i, row in _measured(ctx):
        if is_short_launch(row):
            continue
        time_s = cell_float(row, "time_s", 0.0)
        best: tuple[float, str, float, float] | None = None  # saving, level, ratio, level time
        for level, column, below in (("l2", "l2_bytes", "dram_bytes"), ("l1", "l1_bytes", "l2_bytes")):
            roof = ctx.ceilings.memory_roof(level, fall_back=False)
            moved, under = cell_float(row, column, 0.0), max(cell_float(row, below, 0.0), 1.0)
            if roof is None or roof.value <= 0 or moved < REUSE_RATIO * under:
                continue
            level_s = moved / roof.value
            if level_s < LEVEL_TIME_SHARE * time_s:
                continue
            saving = min(level_s * (1.0 - under / moved), time_s - cell_float(row, "roof_time_s", 0.0))
            if best is None or saving > best[0]:
                best = (saving, level, moved / under, level_s)
        if best is None:
            continue
        saving, level, ratio, level_s = best
        findings.append(make_finding(
            "counters.poor-reuse",
            evidence=(f"{where(row)} moves {ratio:.1f}x more bytes through {level.upper()} than "
                      f"{'from DRAM' if level == 'l2' else 'through L2'}; at the {level.upper()} roof that traffic "
                      f"alone takes {percent(level_s / time_s)} of the kernel's time."),
            recommendation=("Keep reused data close: stage tiles in shared memory (or registers) and reuse them "
                            "across the loop instead of re-loading; make consecutive threads read consecutive "
                            "addresses (coalesced, 16-byte vector loads); for Triton, larger BLOCK sizes along "
                            "the reused dimension."),
            est_saving_s=max(0.0, saving),
            rows=(i,), numbers={"ratio": ratio, "level_time_share": level_s / time_s},
            subject=cell_text(row, "kernel"),
        ))
    return findings


def _l2_size_bytes(ctx: AdviceContext) -> float:
    device = ctx.ceilings.details.get("device")
    value = device.get("l2_bytes") if isinstance(device, dict) else None
    return float(value) if isinstance(value, (int, float)) and value > 0 else math.nan


@rule(id="counters.l2-resident", title="L2-resident, not DRAM-bound", severity="info")
def l2_resident(ctx: AdviceContext) -> list[Finding]:
    """A memory-bound kernel whose data per call fits in L2 and which moves its minimum traffic at
    80% or more of the DRAM roof (or above it): between kernels its data stays in L2, so the DRAM
    roof is not what bounds it; counters confirm its L2 traffic covers the minimum. Held against
    the L2 roof instead (measured by `ceilings --measure`), the rule says how close it is.

    Estimate: none; it tells which kernels a DRAM-bound estimate overstates.
    """
    l2_size, bw = _l2_size_bytes(ctx), dram_bytes_per_s(ctx)
    if not (l2_size > 0 and bw > 0):
        return []
    l2_roof = ctx.ceilings.memory_roof("l2", fall_back=False)
    findings = []
    for i, row in _measured(ctx):
        minimum, time_s = cell_float(row, "bytes", 0.0), cell_float(row, "time_s", 0.0)
        calls = max(1.0, cell_float(row, "calls", 1.0))
        if (cell_text(row, "bound") != "memory" or time_s <= 0 or minimum / calls > l2_size
                or minimum / time_s < L2_RESIDENT_BANDWIDTH * bw or cell_float(row, "l2_bytes", 0.0) < 0.5 * minimum):
            continue
        achieved = minimum / time_s
        against = (f"; against the L2 roof ({si(l2_roof.value, 'B/s')}, {l2_roof.source}) it reaches "
                   f"{percent(achieved / l2_roof.value)}" if l2_roof else "")
        findings.append(make_finding(
            "counters.l2-resident",
            evidence=(f"{where(row)} moves {si(minimum / calls, 'B')} per call, within the {si(l2_size, 'B')} L2, at "
                      f"{si(achieved, 'B/s')} ({percent(achieved / bw)} of the DRAM roof){against}."),
            recommendation=("Its data stays in L2 between kernels: it is bound by L2, not DRAM, and a DRAM-bound "
                            "estimate overstates what it can gain; fusing it with its neighbours still saves its "
                            "launches and L2 round trips."),
            est_saving_s=0.0,
            rows=(i,), numbers={"achieved_over_dram_roof": achieved / bw},
            subject=cell_text(row, "kernel"),
        ))
    return findings
