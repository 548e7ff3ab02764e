"""Small helpers shared by the advice rules: shape parsing, element sizes, formatting, row access."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from rooflinectl.analysis.advice.registry import AdviceContext
from rooflinectl.attribution.calls import parse_shapes
from rooflinectl.costs.tensors import ELEMENT_BYTES
from rooflinectl.schema import SHORT_LAUNCH_S

CUSTOM_ORIGINS: frozenset[str] = frozenset({"triton", "other"})
MATH_FAMILIES: frozenset[str] = frozenset({"gemm", "conv", "attention"})
FUSIBLE_FAMILIES: frozenset[str] = frozenset({"elementwise", "norm", "softmax", "reduction", "copy"})
# Per call: kernels this long are where the grid's shape (waves, a tail, too few blocks for the SMs)
# costs time worth a finding; in shorter ones launch latency and ramp-up dominate.
LONG_KERNEL_S = 20.0e-6
MIN_SHARE = 0.01  # of kernel time: a row smaller than this is not worth a shape or kernel finding
FAR_EFFICIENCY = 0.5  # a kernel under this share of its roof is "far" from it
TARGET_EFFICIENCY = 0.8  # what a well-tuned kernel reaches: the estimates' target


def numel(shape: tuple[int, ...]) -> int:
    return math.prod(shape) if shape else 1


def main_shape(text: Any) -> tuple[int, ...]:
    """The largest input shape (by elements): the tensor an element-wise chain streams over."""
    shapes = parse_shapes(text)
    if not shapes:
        return ()
    return max(shapes, key=lambda s: (numel(s), len(s)))


def element_bytes(row: pd.Series) -> float:
    """Bytes per element of the row's data: from dtype, else precision, else 4 (fp32)."""
    for key in ("dtype", "precision"):
        name = str(row.get(key, "") or "").replace("torch.", "")
        if name in ELEMENT_BYTES:
            return float(ELEMENT_BYTES[name])
    return 4.0


def cell_float(row: pd.Series, key: str, default: float = math.nan) -> float:
    """A float cell, or default when the column is missing or the cell is empty."""
    value = row.get(key, default)
    try:
        value = float(value)
    except (TypeError, ValueError):
        return default
    return default if math.isnan(value) else value


def cell_text(row: pd.Series, key: str) -> str:
    """A string cell, or "" when the column is missing or the cell is empty (None, NaN)."""
    value = row.get(key, "")
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def summary_float(ctx: AdviceContext, key: str) -> float | None:
    """A summary figure as a float, None when missing, not a number, or NaN."""
    value = ctx.summary.get(key)
    if value is None:
        return None
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return None if value != value else value


def time_per_call_s(row: pd.Series) -> float:
    calls = max(1.0, cell_float(row, "calls", 1.0))
    return cell_float(row, "time_s", 0.0) / calls


def is_short_launch(row: pd.Series) -> bool:
    """Shorter per call than SHORT_LAUNCH_S: latency-bound, the launch rules' concern, not a kernel rule's."""
    return time_per_call_s(row) < SHORT_LAUNCH_S


def is_custom(row: pd.Series) -> bool:
    return cell_text(row, "origin") in CUSTOM_ORIGINS


def known_cost(row: pd.Series) -> bool:
    """FLOPs and bytes were counted (cost_source is not none)."""
    return cell_text(row, "cost_source") not in ("", "none")


def usable(row: pd.Series) -> bool:
    """A row whose numbers can be reasoned about: known cost and not above its roof."""
    if cell_text(row, "cost_source") in ("", "none"):
        return False
    return not bool(row.get("above_roof", False))


def launch_sequence(ctx: AdviceContext) -> list[int] | None:
    """Row positions in launch order, or None when the profile did not record it."""
    seq = ctx.summary.get("launch_sequence")
    if not seq:
        return None
    n = len(ctx.kernels)
    out = [int(i) for i in seq if i is not None and 0 <= int(i) < n]
    return out or None


def where(row: pd.Series) -> str:
    """A short human label: op (module) [shapes]."""
    op = cell_text(row, "op") or cell_text(row, "kernel")
    module = cell_text(row, "module")
    shapes = cell_text(row, "shapes")
    label = op
    if module:
        label += f" in {module}"
    if shapes:
        label += f" {shapes}"
    return label


def dram_bytes_per_s(ctx: AdviceContext) -> float:
    roof = ctx.ceilings.memory_bytes_per_s.get("dram")
    return float(roof.value) if roof else math.nan


def sm_count(ctx: AdviceContext) -> int | None:
    """Streaming multiprocessors (GPU) from the ceilings' details or metadata, None when unknown."""
    device = ctx.ceilings.details.get("device")
    nested = device if isinstance(device, dict) else {}
    for source in (nested, ctx.ceilings.details, ctx.metadata):
        for key in ("sm_count", "multiprocessor_count", "sms", "num_sms"):
            value = source.get(key)
            if isinstance(value, (int, float)) and value > 0:
                return int(value)
    return None


# Efficiency (share of the roof) that cuBLAS / cuDNN / FlashAttention typically reach on large
# shapes on H100-class GPUs; used only when the profile holds no library row to compare with.
TYPICAL_LIBRARY_EFFICIENCY: dict[str, float] = {"gemm": 0.7, "conv": 0.6, "attention": 0.6}


def gemm_operands(shapes: list[tuple[int, ...]]) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """(activation, weight) of a matmul-like op: the weight is its largest 2-D operand."""
    mats = [s for s in shapes if len(s) >= 2]
    if len(mats) < 2:
        return None
    weights = [s for s in mats if len(s) == 2] or mats
    weight = max(weights, key=lambda s: (numel(s), s))
    rest = list(mats)
    rest.remove(weight)
    act = next((s for s in rest if s[-1] in weight), rest[0])
    return act, weight


def gemm_m(shapes: list[tuple[int, ...]]) -> int | None:
    """Rows of the activation (tokens): its elements over its last (reduction) dimension."""
    ops = gemm_operands(shapes)
    if ops is None or not ops[0] or ops[0][-1] == 0:
        return None
    return numel(ops[0]) // ops[0][-1]
