"""Collectives against the link roof: the message size of a collective row, and the bus bandwidth
the link reaches at that size (the curve `ceilings --measure` measured, all-reduce busbw by size).

A small all-reduce cannot reach the link's peak whatever the code does: NCCL's latency (some
microseconds per step of the ring) dominates. Where the measured curve is below half its peak at a
row's message size, the row is latency-bound: bucket the messages (bigger, fewer collectives).
"""

from __future__ import annotations

import math

import numpy as np

from rooflinectl.attribution.calls import parse_shapes
from rooflinectl.ceilings.model import Ceilings
from rooflinectl.costs.tensors import ELEMENT_BYTES

LATENCY_SHARE = 0.5  # below half the link's peak at this size: latency-bound


def message_bytes(shapes: str, dtype: str) -> float:
    """A collective row's size per call (nccl-tests' S): its larger buffer's elements x element
    size; the shapes column reads "[n]" or "[in] -> [out]" (costs/collectives.py). NaN if unknown."""
    counts = [math.prod(shape) for shape in parse_shapes(shapes)]
    size = ELEMENT_BYTES.get(str(dtype or ""))
    if not counts or size is None:
        return math.nan
    return float(max(counts) * size)


def link_curve(ceilings: Ceilings) -> tuple[np.ndarray, np.ndarray] | None:
    """(sizes in bytes, bus bytes/s) measured between the local GPUs, or None when not measured."""
    link = ceilings.details.get("link") or {}
    sizes, values = link.get("sizes_bytes"), link.get("bus_bytes_per_s")
    if not sizes or not values or len(sizes) != len(values):
        return None
    order = np.argsort(np.asarray(sizes, dtype=float))
    return np.asarray(sizes, dtype=float)[order], np.asarray(values, dtype=float)[order]


def link_at_size(ceilings: Ceilings, size_bytes: float) -> float:
    """Bus bandwidth the link reached at this message size (log-size interpolation of the
    measured curve, clamped at its ends); NaN without a curve or a size."""
    curve = link_curve(ceilings)
    if curve is None or not size_bytes or not math.isfinite(size_bytes) or size_bytes <= 0:
        return math.nan
    sizes, values = curve
    return float(np.interp(math.log(size_bytes), np.log(sizes), values))


def latency_bound_size(ceilings: Ceilings, size_bytes: float) -> bool:
    """The measured link stays under LATENCY_SHARE of its peak at this message size."""
    roof = ceilings.link()
    at_size = link_at_size(ceilings, size_bytes)
    return roof is not None and math.isfinite(at_size) and at_size < LATENCY_SHARE * roof.value
