"""Readable numbers for every output (table, charts, advice): 4.8 TB/s, 989 TFLOP/s, 12.3 ms, 27.9%.

One home for the formatting, so that a roof or a time reads the same in the table, on the chart
and in the advice text. A core module (not under outputs/): the advice rules (analysis) write
their evidence with it too. Missing values (None, NaN) read "-", zero reads "0 <unit>", infinities
read "inf" / "-inf", and negative values keep their sign with the prefix of their magnitude.

Two styles of number: `digits` significant digits (the default: "4.8", "989", "12.3") or, with
`decimals`, a fixed number of decimals ("1.20", "2.10") for text that lines numbers up.
"""

from __future__ import annotations

import math

_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))
_TIME_UNITS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns"))


def _special(value: float | None) -> str | None:
    """The text for a value that has no scale (missing or infinite), else None."""
    if value is None or math.isnan(value):
        return "-"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return None


def _number(scaled: float, digits: int, decimals: int | None) -> str:
    if decimals is not None:
        return f"{scaled:.{decimals}f}"
    text = f"{scaled:.{digits}g}"
    if "e" in text and abs(scaled) >= 1:  # past the largest scale: 1500, not 1.5e+03
        return f"{scaled:.0f}"
    return text


def _scaled(value: float, scales: tuple[tuple[float, str], ...], digits: int, decimals: int | None) -> str:
    """value in the largest scale it reaches (the smallest scale below that), as 'number name'.

    A value that rounds up to 1000 of one scale (999.7 -> "1e+03") is shown in the next one up.
    """
    index = next((i for i, (scale, _) in enumerate(scales) if abs(value) >= scale), len(scales) - 1)
    while True:
        scale, name = scales[index]
        number = _number(value / scale, digits, decimals)
        if index == 0 or abs(float(number)) < scales[index - 1][0] / scale:
            return f"{number} {name}"
        index -= 1


def si(value: float | None, unit: str, digits: int = 3, *, decimals: int | None = None) -> str:
    """si(4.8e12, "B/s", 2) -> "4.8 TB/s"; si(1.2e12, "FLOP/s", decimals=2) -> "1.20 TFLOP/s".

    Prefixes from k to P; values below 1 keep the bare unit (0.5 FLOP/s).
    """
    special = _special(value)
    if special is not None:
        return special
    if value == 0:
        return f"0 {unit}"
    return _scaled(value, _PREFIXES, digits, decimals) + unit


def seconds(value: float | None, digits: int = 3, *, decimals: int | None = None, micro: str = "us") -> str:
    """seconds(0.0123) -> "12.3 ms"; seconds(4.2e-5, micro="µs") -> "42 µs"; from s down to ns.

    `micro` is the microsecond symbol: "us" for plain text, "µs" where the output can show it.
    """
    special = _special(value)
    if special is not None:
        return special
    if value == 0:
        return "0 s"
    units = tuple((scale, micro if name == "us" else name) for scale, name in _TIME_UNITS)
    return _scaled(value, units, digits, decimals)


def percent(value: float | None, decimals: int = 1) -> str:
    """A share as a percentage: percent(0.279) -> "27.9%"."""
    special = _special(value)
    if special is not None:
        return special
    return f"{100 * value:.{decimals}f}%"
