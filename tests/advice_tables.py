"""Realistic kernel tables for the advice and diff tests, built on CPU without a profiler.

Rows carry the contract columns (rooflinectl.schema.KERNEL_COLUMNS); the derived ones
(intensity, roof_time_s, efficiency, bound, headroom_s, ...) are computed here the way the
analysis stage defines them, against H200-like ceilings.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from rooflinectl.ceilings.model import Ceilings, Roof
from rooflinectl.profile_model import ProfileData

DRAM_BYTES_PER_S = 4.8e12
ELEMENT_SIZE = {"float32": 4, "bfloat16": 2, "float16": 2, "float64": 8}
PRECISION_OF = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16", "float64": "fp64"}


def h200_ceilings() -> Ceilings:
    """Dense spec roofs of an H200 (SXM), 132 SMs."""
    return Ceilings(
        device_name="NVIDIA H200",
        device_kind="cuda",
        memory_bytes_per_s={"dram": Roof(DRAM_BYTES_PER_S, "spec")},
        compute_flops_per_s={
            "tensor.bf16": Roof(989e12, "spec"), "tensor.fp16": Roof(989e12, "spec"),
            "tensor.tf32": Roof(494e12, "spec"), "tensor.fp8": Roof(1979e12, "spec"),
            "tensor.fp64": Roof(67e12, "spec"), "simt.fp32": Roof(67e12, "spec"),
            "simt.fp64": Roof(34e12, "spec"),
        },
        kernel_floor_s=Roof(2e-6, "estimate"),
        details={"device": {"sms": 132}},
    )


def cpu_ceilings() -> Ceilings:
    return Ceilings(device_name="test CPU", device_kind="cpu",
                    memory_bytes_per_s={"dram": Roof(50e9, "measured")},
                    compute_flops_per_s={"simt.fp32": Roof(1e12, "measured")})


def row(op: str, family: str, shapes: str, *, flops: float, bytes_: float, time_s: float | None = None,
        efficiency: float | None = None, calls: int = 1, dtype: str = "bfloat16", precision: str | None = None,
        unit: str | None = None, origin: str = "aten", module: str = "", kernel: str | None = None,
        blocks: float = math.nan, cost_source: str = "analytic") -> dict[str, Any]:
    """One kernel-table row; give time_s, or efficiency (share of the roof) to derive it."""
    precision = precision or PRECISION_OF.get(dtype, "fp32")
    if unit is None:
        unit = "tensor" if family in ("gemm", "conv", "attention") and precision != "fp32" else "simt"
    out = {"kernel": kernel or f"{op.split('::')[-1]}_kernel", "op": op, "op_family": family, "module": module,
           "shapes": shapes, "dtype": dtype, "device": "cuda", "origin": origin, "calls": calls,
           "time_s": time_s, "flops": flops, "bytes": bytes_, "precision": precision, "unit": unit,
           "cost_source": cost_source, "cost_note": "", "blocks": blocks, "threads_per_block": 256.0,
           "rank": 0, "_efficiency": efficiency}
    return out


def elementwise(op: str, shape: tuple[int, ...], *, inputs: int = 1, extra: str = "", dtype: str = "bfloat16",
                efficiency: float = 0.7, calls: int = 1, family: str = "elementwise", **kw: Any) -> dict[str, Any]:
    """A memory-bound element-wise row: reads `inputs` tensors of `shape`, writes one."""
    n = math.prod(shape)
    size = ELEMENT_SIZE[dtype]
    extra_elems = sum(math.prod(int(x) for x in part.strip(" []").split(",") if x.strip())
                      for part in extra.split(" x ") if part.strip(" []")) if extra else 0
    shapes = " x ".join([str(list(shape))] * inputs + ([extra] if extra else []))
    bytes_ = (n * (inputs + 1) + extra_elems) * size * calls
    return row(op, family, shapes, flops=float(n * calls), bytes_=float(bytes_), efficiency=efficiency,
               calls=calls, dtype=dtype, **kw)


def gemm(op: str, m: int, k: int, n: int, *, dtype: str = "bfloat16", efficiency: float = 0.7, calls: int = 1,
         batch: int = 0, **kw: Any) -> dict[str, Any]:
    """A (batched) matmul row with FLOPs 2MNK and minimum bytes (A, B read, C written)."""
    size = ELEMENT_SIZE[dtype]
    b = max(batch, 1)
    flops = 2.0 * b * m * n * k * calls
    bytes_ = float(b * (m * k + k * n + m * n) * size * calls)
    shapes = f"[{batch}, {m}, {k}] x [{batch}, {k}, {n}]" if batch else f"[{m}, {k}] x [{k}, {n}]"
    return row(op, "gemm", shapes, flops=flops, bytes_=bytes_, efficiency=efficiency, calls=calls, dtype=dtype, **kw)


def analyse(rows: list[dict[str, Any]], ceilings: Ceilings) -> pd.DataFrame:
    """Fill the derived columns as the analysis stage defines them (schema.KERNEL_COLUMNS)."""
    out = []
    bw = ceilings.dram().value
    for r in rows:
        r = dict(r)
        eff_wanted = r.pop("_efficiency")
        roof = ceilings.compute_roof(r["unit"], r["precision"])
        peak = roof.value if roof else math.inf
        known = r["cost_source"] != "none"
        roof_s = max(r["flops"] / peak, r["bytes"] / bw) if known else math.nan
        if r["time_s"] is None:
            r["time_s"] = roof_s / eff_wanted
        t = r["time_s"]
        r["intensity"] = r["flops"] / r["bytes"] if known and r["bytes"] else math.nan
        r["achieved_flops_per_s"] = r["flops"] / t if known else math.nan
        r["achieved_bytes_per_s"] = r["bytes"] / t if known else math.nan
        r["attainable_flops_per_s"] = min(peak, r["intensity"] * bw) if known else math.nan
        r["roof_time_s"] = roof_s
        r["efficiency"] = roof_s / t if known else math.nan
        if not known:
            r["bound"] = "unknown"
        elif t / r["calls"] < 5e-6 and r["efficiency"] < 0.3:
            r["bound"] = "latency"
        else:
            r["bound"] = "compute" if r["flops"] / peak > r["bytes"] / bw else "memory"
        r["headroom_s"] = t - roof_s if known else math.nan
        r["above_roof"] = bool(known and r["efficiency"] > 1.05)
        out.append(r)
    table = pd.DataFrame(out)
    table["time_share"] = table["time_s"] / table["time_s"].sum()
    return table


def profile(rows: list[dict[str, Any]], *, ceilings: Ceilings | None = None, sequence: list[int] | None = None,
            summary: dict[str, Any] | None = None, metadata: dict[str, Any] | None = None) -> ProfileData:
    """A ProfileData as `rooflinectl profile` would write it."""
    ceilings = ceilings or h200_ceilings()
    kernels = analyse(rows, ceilings)
    total = float(kernels["time_s"].sum())
    unknown = float(kernels.loc[kernels["cost_source"] == "none", "time_s"].sum())
    base: dict[str, Any] = {"total_kernel_time_s": total, "known_cost_time_share": 1 - unknown / total,
                            "unknown_time_share": unknown / total, "launches": int(kernels["calls"].sum()),
                            "iterations": 1}
    if sequence is not None:
        base["launch_sequence"] = sequence
    base.update(summary or {})
    meta = {"float32_matmul_precision": "highest", "allow_tf32_matmul": False, "allow_tf32_cudnn": True,
            "device_kind": ceilings.device_kind, "device_name": ceilings.device_name}
    meta.update(metadata or {})
    return ProfileData(kernels=kernels, ceilings=ceilings, metadata=meta, summary=base)
