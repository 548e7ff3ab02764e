"""One validation of every number a user gives: a flag (click) or a config key (cli/config.py).

NaN compares false with everything, so `--fail-on-regression nan` would let a 100x slowdown
pass and `--min-efficiency nan` would fail every profile; an infinity makes a gate that can
never fire. Both are refused with one sentence, wherever the number comes from.
"""

from __future__ import annotations

import math
from typing import Any

import click


def range_text(low: float | None, high: float | None) -> str:
    """'between 0 and 1', 'a number >= 0', 'a finite number'."""
    if low is not None and high is not None and math.isfinite(high):
        return f"between {low:g} and {high:g}"
    if low is not None:
        return f"a number >= {low:g}"
    return "a finite number"


def number_problem(value: Any, low: float | None = None, high: float | None = None) -> str | None:
    """Why value is not a usable number in [low, high] (None when it is): not a number, a bool,
    NaN, an infinity, or out of range."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"must be {range_text(low, high)}, not {value!r}"
    try:
        number = float(value)
    except OverflowError:  # an int too large for a float
        number = math.inf
    if not math.isfinite(number):
        return f"must be {range_text(low, high)}, not {value!r} (NaN and infinities cannot be compared)"
    if (low is not None and number < low) or (high is not None and number > high):
        return f"must be {range_text(low, high)}, not {value!r}"
    return None


class FiniteFloatRange(click.FloatRange):
    """click's FloatRange without NaN and infinities (click lets `nan` through every bound)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = click.FloatRange.convert(self, value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number (NaN and infinities cannot be compared).", param, ctx)
        return number
