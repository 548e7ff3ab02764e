"""Costs a Triton kernel reports itself: declared through `launch_metadata` (kernels/cost.py
documents the keys), or for an undeclared kernel the bytes its tensor arguments span.

Input: capture/run/triton_hook.py's summary of a launch (summarise_declaration): flops, flops_by_width,
bytes, precision, tensor_cores, family, and from_arguments for an undeclared one. Which summary a
traced kernel takes is attribution's business (attribution/declared.py); what it costs is here.
"""

from __future__ import annotations

import math
from typing import Any

from rooflinectl.costs.registry import FAMILIES, OpCost

ARGUMENTS_NOTE = ("minimum from arguments: the bytes its tensor arguments span, each read or written once; "
                  "FLOPs unknown, held to the memory roof: the efficiency is a lower bound")


def declared_cost(declared: dict[str, Any]) -> OpCost | None:
    """A Triton kernel's own cost, held to the roof of the unit and width it declares (fp32 on
    tensor cores is tl.dot's default, TF32); mixed widths to the width with the most FLOPs (the
    note says so). Its family is the one it declares (kernels/cost.py), else "other": how the
    math runs does not say what op the kernel is. None when it declares no bytes."""
    if declared.get("bytes") is None:
        return None
    precision = declared.get("precision") or "fp32"
    tensor = bool(declared.get("tensor_cores"))
    if tensor and precision == "fp32":
        precision = "tf32"
    widths = declared.get("flops_by_width") or {}
    mixed = f"; mixed widths {sorted(widths)}, held to {precision}" if len(widths) > 1 else ""
    family = declared.get("family") if declared.get("family") in FAMILIES else "other"
    return OpCost(float(declared.get("flops") or 0.0), float(declared["bytes"]), family, precision,
                  f"declared by the kernel's launch_metadata ({'tensor cores' if tensor else 'CUDA cores'}{mixed})",
                  unit="tensor" if tensor else "simt")


def argument_cost(declared: dict[str, Any]) -> OpCost:
    """An undeclared kernel's minimum from its arguments: its bytes, FLOPs unknown (NaN)."""
    return OpCost(math.nan, float(declared["bytes"]), "other", str(declared.get("precision") or ""),
                  ARGUMENTS_NOTE, unit="simt")


def combined_declaration(launches: list[dict[str, Any]]) -> dict[str, Any]:
    """Several launches of one call (a variant of a reference kernel made of more than one
    kernel) as one declaration: FLOPs (per width too) and bytes summed; the unit, precision and
    family those of the launch with the most FLOPs (the first when none has any), which is how a
    profile holds that launch. One launch is its own declaration."""
    if len(launches) == 1:
        return launches[0]
    lead = max(launches, key=lambda d: d.get("flops") or 0.0)
    widths: dict[str, float] = {}
    for d in launches:
        for width, flops in (d.get("flops_by_width") or {}).items():
            widths[width] = widths.get(width, 0.0) + flops
    known = all(d.get("bytes") is not None for d in launches)
    return {**lead, "flops": sum(d.get("flops") or 0.0 for d in launches), "flops_by_width": widths,
            "bytes": sum(d["bytes"] for d in launches) if known else None}
