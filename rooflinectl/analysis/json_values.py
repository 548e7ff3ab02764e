"""Values ready for JSON: the one walk that every summary and every JSON output passes through.

JSON has no NaN or infinity (Python's json writes them as tokens other readers refuse, and with
allow_nan=False refuses them), and json cannot write numpy scalars. Analysis uses it where a
figure may be unknown in a summary that is written as JSON (clocks, ranks); outputs use it on
each document they write (profile file, show/validate/kernels/ceilings/diff JSON, trace export).
"""

from __future__ import annotations

import math
from typing import Any


def number_or_nan(value: Any) -> float:
    """A summary figure as a float, NaN where it is missing or not a number (None in JSON): never a
    missing figure read as zero."""
    return float(value) if isinstance(value, (int, float)) else math.nan


def json_ready(value: Any) -> Any:
    """A copy with NaN and +-inf as None and numpy scalars (anything with .item()) as Python
    numbers, all the way down dicts, lists and tuples (tuples become lists, as JSON writes them)."""
    if isinstance(value, dict):
        return {key: json_ready(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(item) for item in value]
    if hasattr(value, "item"):  # numpy scalars
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
