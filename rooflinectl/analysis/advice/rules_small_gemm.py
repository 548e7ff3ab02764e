"""GEMMs too small for the tensor cores to matter: skinny or short-K products that are really
memory-bound, and runs of same-shape products that should be one batched call."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

import pandas as pd

from rooflinectl.analysis.advice.common import (
    FAR_EFFICIENCY,
    MIN_SHARE,
    TARGET_EFFICIENCY,
    TYPICAL_LIBRARY_EFFICIENCY,
    cell_float,
    cell_text,
    element_bytes,
    is_short_launch,
    launch_sequence,
    time_per_call_s,
    usable,
    where,
)
from rooflinectl.analysis.advice.gemm_kernels import gemm_dims, is_helper
from rooflinectl.analysis.advice.registry import AdviceContext, Finding, make_finding, rule
from rooflinectl.analysis.advice.rules_precision import DECODE_MAX_M
from rooflinectl.analysis.launch_runs import MIN_RUN
from rooflinectl.units import percent, seconds, si

SKINNY_MAX = 256  # a GEMM with at most this many rows (or columns) is skinny
SMALL_K_MAX = 64
MEMORY_BOUND_SHARE = 0.5  # intensity under half the ridge: memory-bound whatever the kernel
BATCHABLE_OPS = ("aten::mm", "aten::addmm", "aten::matmul", "aten::linear")


def ridge_intensity(ctx: AdviceContext, row: pd.Series) -> float | None:
    """FLOP per byte where the row's compute roof meets the DRAM roof."""
    roof = ctx.ceilings.compute_roof(cell_text(row, "unit"), cell_text(row, "precision"))
    dram = ctx.ceilings.memory_bytes_per_s.get("dram")
    return roof.value / dram.value if roof is not None and dram is not None and dram.value > 0 else None


def rows_at_ridge(ridge: float, size: float, other: int, k: int) -> int | None:
    """The thin side's size at which 2 x thin x other x K / (size x (thin K + K other + thin other))
    reaches the ridge intensity; None when the other sides are too small to ever reach it."""
    denominator = 2.0 * other * k - ridge * size * (k + other)
    return int(ridge * size * k * other / denominator) + 1 if denominator > 0 else None


@rule(id="gemm.skinny", title="A skinny or short-K GEMM is memory-bound", severity="warning")
def skinny(ctx: AdviceContext) -> list[Finding]:
    """A tensor-core GEMM with few rows or columns (17 to 256; fewer is decode, quant.weight-only's
    case) or a short reduction (K <= 64), whose intensity is under half the ridge point, so it is
    memory-bound whatever the kernel, and which reaches under 50% of its DRAM roof (>= 5 us per
    call, >= 1% of kernel time).

    Estimate: the most a better kernel or shape could win at this work: a kernel at 80% of the
    roof: saving = time - roof_time_s / 0.8. Batching rows or merging GEMMs that share an input
    changes the work itself (their gain is larger and not counted).
    """
    if not ctx.on_gpu:
        return []
    total_s = ctx.total_kernel_time_s
    findings = []
    for i, row in ctx.kernels.iterrows():
        if cell_text(row, "op_family") != "gemm" or cell_text(row, "unit") != "tensor" or not usable(row):
            continue
        dims = gemm_dims(cell_text(row, "op"), cell_text(row, "shapes"))
        ridge = ridge_intensity(ctx, row)
        time_s = cell_float(row, "time_s", 0.0)
        if dims is None or ridge is None or not total_s or time_s / total_s < MIN_SHARE:
            continue
        thin = min(dims.m, dims.n)
        short_k = dims.k <= SMALL_K_MAX
        if not (short_k or DECODE_MAX_M < thin <= SKINNY_MAX) or min(dims.m, dims.n) <= DECODE_MAX_M:
            continue
        intensity, eff = cell_float(row, "intensity", 0.0), cell_float(row, "efficiency", 1.0)
        if intensity >= MEMORY_BOUND_SHARE * ridge or eff >= FAR_EFFICIENCY or is_short_launch(row):
            continue
        saving_s = time_s - cell_float(row, "roof_time_s", 0.0) / TARGET_EFFICIENCY
        if saving_s <= 0:
            continue
        if short_k:
            shape, fix = f"K = {dims.k}", (
                f"A reduction of {dims.k} gives each loaded element only {dims.k} multiply-adds: let torch.compile "
                "fuse this product with the element-wise work around it, or fold it into the next GEMM when no "
                "non-linearity separates them (W2 @ W1 once, offline).")
        else:
            side, other = ("M", dims.n) if dims.m <= dims.n else ("N", dims.m)
            needed = rows_at_ridge(ridge, element_bytes(row), other, dims.k)
            noun = "rows" if side == "M" else "columns"
            at = f"; from about {needed} {noun} the product turns compute-bound" if needed else ""
            shape, fix = f"{side} = {thin}", (
                f"Make it fatter: more {noun} per call (batch requests or micro-batches together{at}), or merge "
                "GEMMs that read the same input into one (Q, K and V projections as one Linear with concatenated "
                "weights).")
        findings.append(make_finding(
            "gemm.skinny",
            evidence=(f"{where(row)} has {shape}: intensity {intensity:.0f} FLOP/B, under the ridge "
                      f"{ridge:.0f} FLOP/B of its {cell_text(row, 'precision')} roof, so it is memory-bound and "
                      f"reaches {percent(eff)} of its DRAM roof ({si(cell_float(row, 'achieved_bytes_per_s', 0.0), 'B/s')}) "
                      f"over {seconds(time_s, decimals=2)}."),
            recommendation=fix,
            est_saving_s=saving_s,
            rows=(int(i),),
            numbers={"intensity": intensity, "ridge_intensity": ridge, "efficiency": eff, "time_s": time_s,
                     "M": float(dims.m), "N": float(dims.n), "K": float(dims.k)},
            subject=f"{cell_text(row, 'op')} {cell_text(row, 'shapes')}",
        ))
    return findings


def _one_bmm_s(calls: int, roof_per_call_s: float, floor_s: float) -> float:
    """`calls` same-shape GEMMs as one bmm: at a library GEMM's efficiency, one launch at least."""
    return max(calls * roof_per_call_s / TYPICAL_LIBRARY_EFFICIENCY["gemm"], floor_s)


def same_shape_runs(sequence: list[int]) -> dict[int, Counter[int]]:
    """For each row, how many times it was launched back to back N times in a row (run lengths)."""
    runs: dict[int, Counter[int]] = defaultdict(Counter)
    start = 0
    for pos in range(1, len(sequence) + 1):
        if pos == len(sequence) or sequence[pos] != sequence[start]:
            runs[sequence[start]][pos - start] += 1
            start = pos
    return runs


@dataclass(frozen=True)
class BatchableRuns:
    """One GEMM row's runs of back-to-back launches and what one bmm per run would save."""

    row: int
    lengths: dict[int, int]  # run length -> how many runs of it
    span_s: float | None  # the runs' summed device span (first kernel start to last end); None: not recorded
    expected_span_s: float | None  # the same without the profiler's own cost per launch
    busy_s: float  # the row's kernel time in the runs
    bmm_s: float  # one bmm per run, all runs
    saving_s: float
    idle_saving_s: float  # the part of saving_s that is the GPU waiting between launches

    @property
    def launches(self) -> int:
        return sum(n * count for n, count in self.lengths.items())


def _recorded_runs(ctx: AdviceContext) -> dict[int, list[dict]] | None:
    """summary["back_to_back_runs"] by row; None for a profile written before they were recorded."""
    entries = ctx.summary.get("back_to_back_runs")
    if not isinstance(entries, list):
        return None
    by_row: dict[int, list[dict]] = defaultdict(list)
    for e in entries:
        if isinstance(e, dict) and int(e.get("length", 0)) >= MIN_RUN and 0 <= int(e.get("row", -1)) < len(ctx.kernels):
            by_row[int(e["row"])].append(e)
    return by_row


def _sequence_runs(ctx: AdviceContext) -> dict[int, list[dict]]:
    """Run lengths from the launch sequence alone (no spans: an older profile's), helpers skipped."""
    seq = launch_sequence(ctx) or []
    helpers = {i for i in set(seq) if is_helper(cell_text(ctx.kernels.iloc[i], "kernel"))}
    return {row: [{"length": n, "runs": count} for n, count in lengths.items() if n >= MIN_RUN]
            for row, lengths in same_shape_runs([i for i in seq if i not in helpers]).items()}


def batchable_runs(ctx: AdviceContext) -> list[BatchableRuns]:
    """The runs of back-to-back launches of a batchable GEMM row (mm, addmm, matmul, linear) on a
    GPU, with one bmm's saving per run; gemm.batch-small's findings and what launch.overhead
    leaves to them."""
    if not ctx.on_gpu:
        return []
    recorded = _recorded_runs(ctx)
    by_row = recorded if recorded is not None else _sequence_runs(ctx)
    floor_s = float(ctx.ceilings.kernel_floor_s.value)
    overhead_s = float(ctx.metadata.get("profiler_overhead_per_op_s") or 0.0)
    out = []
    for index, entries in sorted(by_row.items()):
        row = ctx.kernels.iloc[index]
        if not entries or cell_text(row, "op") not in BATCHABLE_OPS or not usable(row) \
                or gemm_dims(cell_text(row, "op"), cell_text(row, "shapes")) is None:
            continue
        lengths: Counter[int] = Counter()
        for e in entries:
            lengths[int(e["length"])] += int(e["runs"])
        per_call_s = time_per_call_s(row)
        roof_per_call_s = cell_float(row, "roof_time_s", 0.0) / max(cell_float(row, "calls", 1.0), 1.0)
        bmm_s = sum(count * _one_bmm_s(n, roof_per_call_s, floor_s) for n, count in lengths.items())
        launches = sum(n * count for n, count in lengths.items())
        if recorded is None:
            busy_s = launches * per_call_s
            span_s = expected_s = None
            saving_s = sum(count * max(0.0, n * per_call_s - _one_bmm_s(n, roof_per_call_s, floor_s))
                           for n, count in lengths.items())
        else:
            busy_s = sum(float(e["busy_s"]) for e in entries)
            span_s = sum(float(e["span_s"]) for e in entries)
            expected_s = max(span_s - launches * overhead_s, busy_s)
            saving_s = max(0.0, expected_s - bmm_s)
        kernel_part_s = min(saving_s, max(0.0, busy_s - bmm_s))
        out.append(BatchableRuns(row=index, lengths=dict(lengths), span_s=span_s, expected_span_s=expected_s,
                                 busy_s=busy_s, bmm_s=bmm_s, saving_s=saving_s,
                                 idle_saving_s=saving_s - kernel_part_s))
    return out


@rule(id="gemm.batch-small", title="Batch same-shape GEMMs into one bmm", severity="warning")
def batch_small(ctx: AdviceContext) -> list[Finding]:
    """On a GPU, the same GEMM group (op, shapes, dtype, kernel) launched 4 or more times back to
    back with nothing between (a Python loop over heads, experts of equal load, ensemble members or
    chunks: a layer stack puts other kernels between its GEMMs), from the launch order (a split-K
    GEMM's reduction kernel between its launches does not break a run).

    Estimate: what the loop costs is each run's span on the device, first kernel start to last
    kernel end, the gaps in which the GPU waits for the host's next launch included (summary
    back_to_back_runs); less the profiler's own measured cost per launch (metadata
    profiler_overhead_per_op_s, one recorded op and one kernel; the loop's other recorded ops, such
    as the indexing of its operands, are not taken out, so the estimate may run a little high),
    but never less than the kernels' time. One bmm runs a run's work at a typical library
    efficiency (0.7 of the roof), and at least one kernel floor: saving = sum over runs of
    (span - max(run length x roof time per call / 0.7, floor)). A profile written before the
    spans were recorded counts the kernels' time only (run length x time per call), not the gaps.
    """
    findings = []
    for runs in batchable_runs(ctx):
        row = ctx.kernels.iloc[runs.row]
        dims = gemm_dims(cell_text(row, "op"), cell_text(row, "shapes"))
        if dims is None or runs.saving_s <= 0:  # dims: known by batchable_runs
            continue
        count = sum(runs.lengths.values())
        typical = max(runs.lengths, key=lambda n: (runs.lengths[n], n))
        per_call_s = time_per_call_s(row)
        if runs.span_s is None:
            cost = " (this profile records no spans of the runs: the gaps between launches are not counted)"
        else:
            cost = (f"; the runs span {seconds(runs.span_s / count, decimals=2)} each on the device, "
                    f"{seconds(runs.busy_s / count, decimals=2)} of it in these kernels: the rest is the GPU waiting "
                    "for the host's next launch")
            if runs.expected_span_s is not None and runs.expected_span_s < runs.span_s:
                cost += (f" (about {seconds(runs.expected_span_s / count, decimals=2)} without the profiler's own "
                         "cost per launch)")
        numbers = {"runs": float(count), "run_length": float(typical), "time_per_call_s": per_call_s,
                   "launches_in_runs": float(runs.launches), "busy_s": runs.busy_s, "bmm_s": runs.bmm_s}
        if runs.span_s is not None and runs.expected_span_s is not None:
            numbers.update(span_s=runs.span_s, expected_span_s=runs.expected_span_s)
        findings.append(make_finding(
            "gemm.batch-small",
            evidence=(f"{where(row)} ran in {count} run(s) of back-to-back launches ({typical} per run most often), "
                      f"{seconds(per_call_s, decimals=2)} per call at {percent(cell_float(row, 'efficiency', 0.0))} "
                      f"of its roof{cost}."),
            recommendation=(f"Stack the {typical} operands and call torch.bmm once ([{typical}, {dims.m}, {dims.k}] @ "
                            f"[{typical}, {dims.k}, {dims.n}]; for Linear layers, a [{typical}, {dims.k}, {dims.n}] "
                            "weight and torch.baddbmm), or torch.func.vmap over the loop; experts with different "
                            "token counts: torch._grouped_mm. One launch instead of "
                            f"{typical} also removes the host's launch gaps a CUDA graph would otherwise have to hide."),
            est_saving_s=runs.saving_s,
            rows=(runs.row,),
            numbers=numbers,
            subject=f"{cell_text(row, 'op')} {cell_text(row, 'shapes')} x{typical}",
            idle_saving_s=runs.idle_saving_s,
        ))
    return findings
