"""Rules about single kernels against their roof: library fallback, stop here, tiling/coalescing.

A user kernel whose cost is its arguments' bytes (cost_source triton-args) or a custom op's
inputs and outputs has a minimum for bytes and no FLOPs: its efficiency is a lower bound, and the
evidence says so ("92% or more"). Far under its roof, it may move more than that minimum (strided,
uncoalesced or repeated reads): the evidence adds what the launch shows (grid, block, registers,
shared memory) and points to --counters ncu, which measures the traffic."""

from __future__ import annotations

import math

import pandas as pd

from rooflinectl.analysis.advice.common import (
    FAR_EFFICIENCY,
    MATH_FAMILIES,
    MIN_SHARE,
    TARGET_EFFICIENCY,
    TYPICAL_LIBRARY_EFFICIENCY,
    cell_float,
    cell_text,
    is_custom,
    is_short_launch,
    usable,
    where,
)
from rooflinectl.analysis.advice.registry import AdviceContext, Finding, make_finding, rule
from rooflinectl.units import percent, seconds

STOP_EFFICIENCY = 0.8  # at or above this share of the roof, a custom kernel cannot win much
STOP_MIN_SHARE = 0.05
STOP_ACHIEVABLE = 0.9  # a compute-bound kernel at this share of the measured achievable peak is as fast as the library
LIBRARY_GAP = 0.5  # custom efficiency under this fraction of the library's: call the library


def is_lower_bound(row: pd.Series) -> bool:
    """Bytes a minimum and FLOPs unknown: the efficiency is a lower bound."""
    return math.isnan(cell_float(row, "flops")) and not math.isnan(cell_float(row, "bytes"))


def efficiency_text(row: pd.Series) -> str:
    """'92%', or '92% or more' when the efficiency is a lower bound."""
    eff = percent(cell_float(row, "efficiency", 0.0))
    return f"{eff} or more" if is_lower_bound(row) else eff


def launch_evidence(row: pd.Series) -> str:
    """What the launch shows of the kernel's configuration: ' Launch: 65536 blocks x 128 threads, ...'."""
    parts = []
    blocks, threads = cell_float(row, "blocks"), cell_float(row, "threads_per_block")
    if not math.isnan(blocks) and not math.isnan(threads):
        parts.append(f"{blocks:.0f} blocks x {threads:.0f} threads")
    registers, shared = cell_float(row, "registers_per_thread"), cell_float(row, "shared_bytes_per_block")
    if not math.isnan(registers):
        parts.append(f"{registers:.0f} registers/thread")
    if not math.isnan(shared):
        parts.append(f"{shared / 1024:.0f} KiB shared memory/block")
    return f" Launch: {', '.join(parts)}." if parts else ""


def library_efficiency(ctx: AdviceContext, row: pd.Series) -> tuple[float, str]:
    """The efficiency a library reaches on this work: same shapes, else same family and
    precision in this profile (time-weighted), else a typical figure. Returns (eff, source)."""
    k = ctx.kernels
    lib = k[~k["origin"].isin(["triton", "other"]) & (k["op_family"] == cell_text(row, "op_family"))]
    lib = lib[[usable(r) for _, r in lib.iterrows()]] if len(lib) else lib
    same = lib[(lib["shapes"] == cell_text(row, "shapes")) & (lib["precision"] == cell_text(row, "precision"))]
    for subset, source in ((same, "library on the same shapes"),
                           (lib[lib["precision"] == cell_text(row, "precision")], "library in this profile")):
        time_s = float(subset["time_s"].sum()) if len(subset) else 0.0
        if time_s > 0:
            return float(subset["roof_time_s"].sum()) / time_s, source
    return TYPICAL_LIBRARY_EFFICIENCY.get(cell_text(row, "op_family"), 0.6), "typical library efficiency"


def _library_case(ctx: AdviceContext, row: pd.Series) -> tuple[float, str] | None:
    if not (is_custom(row) and cell_text(row, "op_family") in MATH_FAMILIES and usable(row)):
        return None
    lib_eff, source = library_efficiency(ctx, row)
    if cell_float(row, "efficiency", 1.0) >= LIBRARY_GAP * lib_eff:
        return None
    return lib_eff, source


@rule(id="library.fallback", title="Call the library instead of a custom kernel", severity="warning")
def library_fallback(ctx: AdviceContext) -> list[Finding]:
    """A custom (Triton / CUDA) GEMM, convolution or attention kernel at less than half the
    efficiency a library reaches on the same work (same shapes in this profile, else the same
    family and precision, else a typical cuBLAS/cuDNN/FlashAttention efficiency).

    Estimate: at the library's efficiency the kernel would take time x own / library efficiency.
    """
    findings = []
    for i, row in ctx.kernels.iterrows():
        case = _library_case(ctx, row)
        if case is None:
            continue
        lib_eff, source = case
        eff = cell_float(row, "efficiency", 0.0)
        time_s = cell_float(row, "time_s", 0.0)
        call = {"gemm": "torch.matmul / F.linear (cuBLAS)", "conv": "F.conv2d (cuDNN)",
                "attention": "F.scaled_dot_product_attention"}[cell_text(row, "op_family")]
        findings.append(make_finding(
            "library.fallback",
            evidence=(f"custom kernel {cell_text(row, 'kernel')} ({where(row)}) reaches {percent(eff)} of its "
                      f"roof; the {source} reaches {percent(lib_eff)}."),
            recommendation=(f"Call {call} for this {cell_text(row, 'op_family')} unless the custom kernel fuses "
                            "something the library cannot; if it must stay, autotune its tile sizes."),
            est_saving_s=time_s * (1.0 - eff / lib_eff),
            rows=(int(i),),
            numbers={"efficiency": eff, "library_efficiency": lib_eff, "time_s": time_s},
            subject=cell_text(row, "kernel"),
        ))
    return findings


@rule(id="roof.stop-here", title="Stop here: this kernel is at its roof", severity="info")
def stop_here(ctx: AdviceContext) -> list[Finding]:
    """A kernel at 80% or more of its roof, or a compute-bound one at 90% or more of the achievable
    peak this GPU measured (the best cuBLAS reached: the theoretical roof is a ceiling no library
    reaches), and at least 5% of kernel time (1% for a custom kernel: its author wants to know when
    to stop): no custom kernel can win more than its headroom (time - roof time); the next gain is
    less work (fusion, precision).

    Estimate: none (0 s); the evidence states the most any kernel could win.
    """
    total_s = ctx.total_kernel_time_s
    findings = []
    for i, row in ctx.kernels.iterrows():
        eff = cell_float(row, "efficiency", 0.0)
        time_s = cell_float(row, "time_s", 0.0)
        min_share = MIN_SHARE if is_custom(row) else STOP_MIN_SHARE
        at_achievable = (cell_text(row, "bound") == "compute"
                         and cell_float(row, "efficiency_achievable", 0.0) >= STOP_ACHIEVABLE)
        if not usable(row) or (eff < STOP_EFFICIENCY and not at_achievable) or not total_s \
                or time_s / total_s < min_share:
            continue
        headroom_s = max(0.0, cell_float(row, "headroom_s", time_s - cell_float(row, "roof_time_s", time_s)))
        achievable = (f", {percent(cell_float(row, 'efficiency_achievable', 0.0))} of the achievable peak "
                      "this GPU measured") if at_achievable and eff < STOP_EFFICIENCY else ""
        findings.append(make_finding(
            "roof.stop-here",
            evidence=(f"{where(row)} runs at {efficiency_text(row)} of its {cell_text(row, 'bound')} roof"
                      f"{achievable} ({percent(time_s / total_s)} of kernel time)"
                      + (", on the minimum bytes of its arguments." if is_lower_bound(row) else ".")),
            recommendation=(f"Stop here: a custom kernel can win at most {percent(headroom_s / time_s)} of "
                            f"this kernel ({seconds(headroom_s, decimals=2)}, {percent(headroom_s / total_s)} of kernel "
                            "time). To go faster, do less work: fuse it away, lower the precision, or "
                            "change the algorithm."),
            est_saving_s=0.0,
            rows=(int(i),),
            numbers={"efficiency": eff, "headroom_s": headroom_s, "max_win_share": headroom_s / time_s},
            subject=cell_text(row, "kernel") or cell_text(row, "op"),
        ))
    return findings


def _far_custom(ctx: AdviceContext, bound: str) -> list[tuple[int, pd.Series]]:
    return [(int(i), r) for i, r in ctx.kernels.iterrows()
            if is_custom(r) and usable(r) and cell_text(r, "bound") == bound
            and cell_float(r, "efficiency", 1.0) < FAR_EFFICIENCY and not is_short_launch(r)
            and _library_case(ctx, r) is None]


def _tiling_findings(ctx: AdviceContext, rule_id: str, bound: str, fix: str) -> list[Finding]:
    findings = []
    for i, row in _far_custom(ctx, bound):
        time_s = cell_float(row, "time_s", 0.0)
        roof_s = cell_float(row, "roof_time_s", 0.0)
        eff = cell_float(row, "efficiency", 0.0)
        achieved = (f"{cell_float(row, 'achieved_bytes_per_s', 0.0) / 1e9:.0f} GB/s" if bound == "memory"
                    else f"{cell_float(row, 'achieved_flops_per_s', 0.0) / 1e12:.1f} TFLOP/s")
        minimum = ("; on the minimum bytes of its arguments: strided or repeated reads move more, "
                   "which --counters ncu measures" if is_lower_bound(row) else "")
        findings.append(make_finding(
            rule_id,
            evidence=(f"custom {bound}-bound kernel {cell_text(row, 'kernel')} ({where(row)}) reaches "
                      f"{efficiency_text(row)} of its roof ({achieved}{minimum}) over "
                      f"{seconds(time_s, decimals=2)}.{launch_evidence(row)}"),
            recommendation=fix,
            est_saving_s=time_s - roof_s / TARGET_EFFICIENCY,
            rows=(i,),
            numbers={"efficiency": eff, "time_s": time_s, "roof_time_s": roof_s},
            subject=cell_text(row, "kernel"),
        ))
    return findings


@rule(id="custom.memory-far-from-roof", title="Fix the memory access of a custom kernel", severity="warning")
def custom_memory(ctx: AdviceContext) -> list[Finding]:
    """A custom memory-bound kernel (>= 5 us per call) under 50% of the DRAM roof.

    Estimate: a well-written kernel reaches 80% of its roof: saving = time - roof_time_s / 0.8.
    """
    return _tiling_findings(
        ctx, "custom.memory-far-from-roof", "memory",
        "Coalesce the accesses (consecutive threads read consecutive addresses; make the fastest-"
        "moving index the contiguous one), use vectorised 16-byte loads, tile through shared memory "
        "for transposes/strided reads, and give each program enough bytes in flight (BLOCK_SIZE, "
        "num_warps).")


@rule(id="custom.compute-far-from-roof", title="Tile and autotune a custom compute-bound kernel", severity="warning")
def custom_compute(ctx: AdviceContext) -> list[Finding]:
    """A custom compute-bound kernel (>= 5 us per call) under 50% of its compute roof, which a
    library does not cover (otherwise library.fallback speaks).

    Estimate: a well-tuned kernel reaches 80% of its roof: saving = time - roof_time_s / 0.8.
    """
    return _tiling_findings(
        ctx, "custom.compute-far-from-roof", "compute",
        "Tile for reuse (blocks of BLOCK_M x BLOCK_N with a K loop, operands staged in shared memory), "
        "use tensor-core dot products (tl.dot) in bf16/tf32, and autotune block sizes, num_warps and "
        "num_stages with @triton.autotune over the real shapes.")


@rule(id="data.above-roof", title="A kernel is above its roof: the numbers are wrong", severity="info")
def above_roof(ctx: AdviceContext) -> list[Finding]:
    """A kernel whose efficiency is above 1.05: its cost model or the ceilings are wrong, so no
    other rule uses it. Estimate: none."""
    if "above_roof" not in ctx.kernels.columns:
        return []
    findings = []
    for i, row in ctx.kernels[ctx.kernels["above_roof"].astype(bool)].iterrows():
        suspect = {"flops": "FLOPs", "bytes": "bytes"}.get(cell_text(row, "suspect"), "FLOPs or bytes")
        level = cell_text(row, "memory_level") or "dram"
        evidence = (f"{where(row)} shows {percent(cell_float(row, 'efficiency', 0.0))} of its roof ("
                    + (f"held to the {level} roof; " if suspect == "bytes" else "")
                    + f"suspect count: {suspect}, from {cell_text(row, 'cost_source')}: "
                      f"{cell_text(row, 'cost_note') or 'no note'}).")
        findings.append(make_finding(
            "data.above-roof",
            evidence=evidence,
            recommendation=(f"Check the {suspect} the cost formula gives this op (over-counted?) and the "
                            "ceilings (`rooflinectl ceilings --measure`); the row is left out of efficiency "
                            "figures and gates."),
            est_saving_s=0.0,
            rows=(int(i),),
            numbers={"efficiency": cell_float(row, "efficiency", 0.0)},
            subject=cell_text(row, "kernel") or cell_text(row, "op"),
        ))
    return findings
