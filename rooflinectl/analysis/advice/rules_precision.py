"""Rules about number formats and GEMM shape: TF32/bf16, bf16 storage, weight-only quantisation, MoE."""

from __future__ import annotations

from collections import defaultdict

import pandas as pd

from rooflinectl.analysis.advice.common import (
    FUSIBLE_FAMILIES,
    TYPICAL_LIBRARY_EFFICIENCY,
    cell_float,
    cell_text,
    element_bytes,
    gemm_m,
    gemm_operands,
    numel,
    parse_shapes,
    usable,
)
from rooflinectl.analysis.advice.registry import AdviceContext, Finding, make_finding, rule
from rooflinectl.units import percent, seconds, si

MIN_BF16_STORAGE_SHARE = 0.05  # bf16 storage is worth a sentence from this share of kernel time
DECODE_MAX_M = 16  # a GEMM with at most this many rows is decode-like (weight-streaming)
MIN_WEIGHT_ELEMENTS = 65536


def _rows(ctx: AdviceContext, keep) -> list[tuple[int, pd.Series]]:  # noqa: ANN001 - predicate
    return [(int(i), row) for i, row in ctx.kernels.iterrows() if keep(row)]


@rule(id="precision.fp32-matmul", title="Run fp32 matmuls on tensor cores (TF32 / bf16)", severity="warning")
def fp32_matmul(ctx: AdviceContext) -> list[Finding]:
    """fp32 GEMMs, convolutions or attention that ran on CUDA cores (precision fp32, unit simt) on a
    GPU whose tensor cores have a TF32 roof.

    Estimate: the library keeps the efficiency it reaches now (at most 0.8) on the TF32 roof:
    new time = max(flops / TF32 peak, bytes / DRAM) / efficiency, at least one kernel floor per
    call; saving = time - new time. bf16 autocast would roughly halve the new time again.
    """
    tf32 = ctx.ceilings.compute_roof("tensor", "tf32")
    if not ctx.on_gpu or tf32 is None:
        return []
    bw = float(ctx.ceilings.dram().value) if "dram" in ctx.ceilings.memory_bytes_per_s else float("inf")
    floor_s = float(ctx.ceilings.kernel_floor_s.value)
    by_family: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for i, row in _rows(ctx, lambda r: cell_text(r, "op_family") in ("gemm", "conv", "attention")
                        and cell_text(r, "precision") == "fp32" and cell_text(r, "unit") == "simt"
                        and cell_text(r, "bound") != "latency" and usable(r)):
        eff = min(max(cell_float(row, "efficiency", 0.5), 0.05), 0.8)
        roof_s = max(cell_float(row, "flops", 0.0) / tf32.value, cell_float(row, "bytes", 0.0) / bw)
        new_s = max(roof_s / eff, cell_float(row, "calls", 1.0) * floor_s)
        by_family[cell_text(row, "op_family")].append((i, max(0.0, cell_float(row, "time_s", 0.0) - new_s)))
    fixes = {
        "gemm": "torch.set_float32_matmul_precision(\"high\") (TF32 on tensor cores, ~10 mantissa bits), "
                "or torch.autocast(\"cuda\", dtype=torch.bfloat16) for the bf16 roof.",
        "conv": "torch.backends.cudnn.allow_tf32 = True (PyTorch's default; something switched it off), "
                "or torch.autocast(\"cuda\", dtype=torch.bfloat16).",
        "attention": "torch.autocast(\"cuda\", dtype=torch.bfloat16) around the attention, so SDPA runs "
                     "its bf16 FlashAttention kernel.",
    }
    findings = []
    for family, items in sorted(by_family.items()):
        rows = [i for i, _ in items]
        time_s = sum(cell_float(ctx.kernels.iloc[i], "time_s", 0.0) for i in rows)
        flops = sum(cell_float(ctx.kernels.iloc[i], "flops", 0.0) for i in rows)
        saving_s = sum(s for _, s in items)
        if saving_s <= 0:
            continue
        findings.append(make_finding(
            "precision.fp32-matmul",
            evidence=(f"{len(rows)} fp32 {family} group(s) ran on CUDA cores: {seconds(time_s, decimals=2)} at "
                      f"{si(flops / time_s if time_s else 0.0, 'FLOP/s', decimals=2)}; this GPU's TF32 tensor "
                      f"roof is {si(tf32.value, 'FLOP/s', decimals=2)} (float32_matmul_precision="
                      f"{ctx.metadata.get('float32_matmul_precision', '?')!r})."),
            recommendation=fixes[family],
            est_saving_s=saving_s,
            rows=rows,
            numbers={"time_s": time_s, "flops": flops, "tf32_flops_per_s": float(tf32.value)},
            subject=family,
        ))
    return findings


@rule(id="precision.bf16-storage", title="Store memory-bound fp32 tensors in bf16", severity="info")
def bf16_storage(ctx: AdviceContext) -> list[Finding]:
    """Memory-bound fp32 element-wise / norm / softmax / reduction / copy kernels taking at least
    5% of kernel time.

    Estimate: their bytes halve in bf16 at the same bandwidth: saving = half their time.
    """
    if not ctx.on_gpu:
        return []
    items = _rows(ctx, lambda r: cell_text(r, "precision") == "fp32" and cell_text(r, "bound") == "memory"
                  and cell_text(r, "op_family") in FUSIBLE_FAMILIES and usable(r))
    time_s = sum(cell_float(r, "time_s", 0.0) for _, r in items)
    total_s = ctx.total_kernel_time_s
    if not items or not total_s or time_s / total_s < MIN_BF16_STORAGE_SHARE:
        return []
    return [make_finding(
        "precision.bf16-storage",
        evidence=(f"{len(items)} memory-bound fp32 kernel groups take {seconds(time_s, decimals=2)} "
                  f"({percent(time_s / total_s)} of kernel time); their traffic is 4 bytes per element."),
        recommendation=("Keep activations in bf16: torch.autocast(\"cuda\", dtype=torch.bfloat16) for the "
                        "forward, or model.to(torch.bfloat16) where accuracy allows; norms and softmax "
                        "still accumulate in fp32 inside the kernel."),
        est_saving_s=0.5 * time_s,
        rows=[i for i, _ in items],
        numbers={"time_s": time_s},
        subject="fp32 activations",
    )]


@rule(id="quant.weight-only", title="Quantise weights (int8 / fp8 weight-only)", severity="warning")
def weight_only_quant(ctx: AdviceContext) -> list[Finding]:
    """Memory-bound GEMM / GEMV with few rows (M <= 16: decode-like), whose time is spent streaming
    the weight.

    Estimate: int8 or fp8 weights are 1 byte per element: saving = time x (weight bytes / all
    bytes) x (1 - 1 / element size). Activations and outputs keep their size.
    """
    if not ctx.on_gpu:
        return []
    picked: list[tuple[int, float, float]] = []
    for i, row in ctx.kernels.iterrows():
        if cell_text(row, "op_family") != "gemm" or "bmm" in cell_text(row, "op") or cell_text(row, "bound") != "memory":
            continue
        if cell_text(row, "precision") in ("int8", "fp8") or not usable(row):
            continue
        shapes = parse_shapes(row.get("shapes", ""))
        m = gemm_m(shapes)
        ops = gemm_operands(shapes)
        if m is None or ops is None or m > DECODE_MAX_M or numel(ops[1]) < MIN_WEIGHT_ELEMENTS:
            continue
        size = element_bytes(row)
        weight_bytes = numel(ops[1]) * size * cell_float(row, "calls", 1.0)
        share = min(1.0, weight_bytes / max(cell_float(row, "bytes", weight_bytes), 1.0))
        picked.append((int(i), weight_bytes, cell_float(row, "time_s", 0.0) * share * (1.0 - 1.0 / size)))
    if not picked:
        return []
    rows = [i for i, _, _ in picked]
    time_s = sum(cell_float(ctx.kernels.iloc[i], "time_s", 0.0) for i in rows)
    weight_bytes = sum(w for _, w, _ in picked)
    return [make_finding(
        "quant.weight-only",
        evidence=(f"{len(rows)} memory-bound GEMM group(s) with M <= {DECODE_MAX_M} rows stream "
                  f"{weight_bytes / 1e9:.2f} GB of weights in {seconds(time_s, decimals=2)} (decode-like)."),
        recommendation=("Quantise the linear weights: torchao.quantization.quantize_(model, "
                        "Int8WeightOnlyConfig()) or a float8 weight-only config on Hopper; fewer weight "
                        "bytes is the speed-up for GEMV-shaped work."),
        est_saving_s=sum(s for _, _, s in picked),
        rows=rows,
        numbers={"time_s": time_s, "weight_bytes": weight_bytes},
        subject="linear weights",
    )]


@rule(id="moe.grouped-gemm", title="Use a grouped GEMM for many small expert GEMMs", severity="warning")
def grouped_gemm(ctx: AdviceContext) -> list[Finding]:
    """Many small GEMMs of one weight shape: 3 or more different row counts (tokens per expert),
    or an "expert" module, with 8 or more launches and low efficiency (< 0.5).

    Estimate: one grouped GEMM runs the same work at a typical library efficiency (0.7 of the
    roof): saving = time - sum(roof_time_s) / 0.7.
    """
    groups: dict[tuple[str, tuple[int, ...], str], list[int]] = defaultdict(list)
    for i, row in ctx.kernels.iterrows():
        # a grouped GEMM already (torch._grouped_mm, transformers' Mixtral experts): the fix is in
        if cell_text(row, "op_family") != "gemm" or not usable(row) or "grouped" in cell_text(row, "op"):
            continue
        ops = gemm_operands(parse_shapes(row.get("shapes", "")))
        if ops is not None:
            groups[(cell_text(row, "op"), ops[1], cell_text(row, "dtype"))].append(int(i))
    findings = []
    lib_eff = TYPICAL_LIBRARY_EFFICIENCY["gemm"]
    for (op, weight, _), rows in sorted(groups.items()):
        sub = ctx.kernels.iloc[rows]
        ms = {gemm_m(parse_shapes(s)) for s in sub["shapes"]}
        calls = float(sub["calls"].sum())
        expert = any("expert" in str(m).lower() for m in sub.get("module", pd.Series(dtype=str)))
        time_s = float(sub["time_s"].sum())
        roof_s = float(sub["roof_time_s"].fillna(0.0).sum()) if "roof_time_s" in sub else 0.0
        if calls < 8 or not (len(ms) >= 3 or expert) or not time_s or roof_s / time_s >= 0.5:
            continue
        saving_s = time_s - roof_s / lib_eff
        if saving_s <= 0:
            continue
        findings.append(make_finding(
            "moe.grouped-gemm",
            evidence=(f"{int(calls)} launches of {op} against {list(weight)} weights with {len(ms)} "
                      f"different row counts take {seconds(time_s, decimals=2)} at {percent(roof_s / time_s)} of their roof."),
            recommendation=("Run the experts as one grouped GEMM: torch._grouped_mm (PyTorch 2.8+), a Triton "
                            "grouped/persistent MoE kernel (e.g. vLLM fused_moe), or sort tokens by expert "
                            "and pad into one bmm."),
            est_saving_s=saving_s,
            rows=rows,
            numbers={"time_s": time_s, "roof_time_s": roof_s, "launches": calls},
            # the module (merge.py names a module of every layer by its pattern) and the weights'
            # shape: two expert GEMMs of one MoE (up and down projections) are two patterns
            subject=" ".join(filter(None, [next((str(m) for m in sub.get("module", []) if m), ""),
                                           f"{op} on {list(weight)} weights"])),
        ))
    return findings
