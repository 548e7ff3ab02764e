"""Realistic kernel tables for the advice and diff tests, built on CPU without a profiler.

Rows carry the contract columns (rooflinectl.schema.KERNEL_COLUMNS); the derived ones
(intensity, roof_time_s, efficiency, bound, headroom_s, ...) come from the product's own
analysis.roofline.place_on_roofline, against H200-like ceilings. Rows whose kernels a custom
Triton kernel wrote are made by the attribution stage itself (triton_row).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from rooflinectl.analysis.roofline import place_on_roofline
from rooflinectl.ceilings.model import Ceilings, Roof
from rooflinectl.profile_model import ProfileData
from rooflinectl.schema import KERNEL_COLUMNS

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
        blocks: float = math.nan, cost_source: str = "analytic", source: str = "", op_args: str = "") -> dict[str, Any]:
    """One kernel-table row; give time_s, or efficiency (share of the roof) to derive it."""
    precision = precision or PRECISION_OF.get(dtype, "fp32")
    if cost_source == "none":  # as attribution writes it: an unknown cost is NaN, never a number
        flops = bytes_ = math.nan
    if unit is None:
        unit = "tensor" if family in ("gemm", "conv", "attention") and precision != "fp32" else "simt"
    out = {"kernel": kernel or f"{op.split('::')[-1]}_kernel", "op": op, "op_family": family, "module": module,
           "shapes": shapes, "dtype": dtype, "device": "cuda", "origin": origin, "calls": calls,
           "time_s": time_s, "flops": flops, "bytes": bytes_, "precision": precision, "unit": unit,
           "cost_source": cost_source, "cost_note": "", "blocks": blocks, "threads_per_block": 256.0,
           "rank": 0, "source": source, "source_function": "", "source_call": "", "op_args": op_args,
           "_efficiency": efficiency}
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
    """Place the rows on the roofline with the product's own function (analysis.roofline, tested
    against hand values in test_roofline_analysis.py); a row given an efficiency instead of a
    time gets time = roof time / efficiency."""
    table = pd.DataFrame([{k: v for k, v in r.items() if k != "_efficiency"} for r in rows])
    wanted = pd.Series([r["_efficiency"] for r in rows], dtype=float)
    untimed = table["time_s"].isna()
    table["time_s"] = table["time_s"].astype(float).fillna(1.0)
    roof_s = place_on_roofline(table, ceilings)["roof_time_s"]
    table.loc[untimed, "time_s"] = roof_s[untimed] / wanted[untimed]
    placed = place_on_roofline(table, ceilings)
    return placed[list(KERNEL_COLUMNS)]


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


def triton_row(name: str, *, flops: float, bytes_: float, flops_key: str = "flops16", time_s: float | None = None,
               efficiency: float | None = None, calls: int = 1, grid: tuple[int, int, int] = (132, 1, 1),
               block: tuple[int, int, int] = (128, 1, 1), registers: int | None = None,
               shared: int | None = None, declared_extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """A row for a user Triton kernel that declares its cost through launch_metadata, made the
    way `rooflinectl profile` makes it: the capture's summary of the declared dict, then the
    attribution stage (join and grouping) on a trace holding the kernel's launches."""
    from rooflinectl.attribution.group import group_launches
    from rooflinectl.attribution.join import attribute
    from rooflinectl.capture.read.raw import RawKernel, RawTrace
    from rooflinectl.capture.run.triton_hook import summarise_declaration

    declared = summarise_declaration({"name": name, flops_key: flops / calls, "bytes": bytes_ / calls, **(declared_extra or {})})
    dur_ns = 1000
    kernels = [RawKernel(name=name, category="kernel", ts_ns=10_000 * i, dur_ns=dur_ns, external_id=-1,
                         correlation=i + 1, grid=grid, block=block, registers_per_thread=registers,
                         shared_memory=shared) for i in range(calls)]
    trace = RawTrace(ops=[], kernels=kernels, launch_ts_ns={i + 1: 10_000 * i for i in range(calls)},
                     triton_launches=[declared] * calls)
    table, _ = group_launches(attribute(trace, "cuda", {}).launches)
    (out,) = table.to_dict("records")
    out.update(rank=0, time_s=time_s, _efficiency=efficiency)
    return out
