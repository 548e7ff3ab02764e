"""Readable numbers with SI prefixes: 1.23 TFLOP/s, 4.8 TB/s, 12.3 ms."""

from __future__ import annotations

import math

_PREFIXES = [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, "")]


def si(value: float, unit: str, digits: int = 3) -> str:
    """si(4.8e12, "B/s") -> "4.80 TB/s"; NaN -> "-"."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if value == 0:
        return f"0 {unit}"
    if math.isinf(value):
        return "inf"
    for scale, prefix in _PREFIXES:
        if abs(value) >= scale:
            return f"{value / scale:.{digits}g} {prefix}{unit}"
    return f"{value:.{digits}g} {unit}"


def seconds(value: float) -> str:
    """seconds(0.0123) -> "12.3 ms"."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    for scale, name in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns")):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {name}"
    return "0 s"


def percent(value: float) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{100 * value:.1f}%"
