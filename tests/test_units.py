"""The one home of readable numbers: SI prefixes, times and percentages for table, charts and advice."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rooflinectl.units import percent, seconds, si


@pytest.mark.parametrize(("value", "unit", "digits", "expected"), [
    (4.8e12, "B/s", 2, "4.8 TB/s"),
    (11e12, "B/s", 2, "11 TB/s"),
    (989e12, "FLOP/s", 3, "989 TFLOP/s"),
    (1e15, "FLOP/s", 3, "1 PFLOP/s"),
    (2.5e9, "FLOP", 3, "2.5 GFLOP"),
    (3.21e6, "B", 3, "3.21 MB"),
    (4.2e3, "B", 3, "4.2 kB"),
    (42.0, "B", 3, "42 B"),
    (0.5, "FLOP/s", 3, "0.5 FLOP/s"),
    (1.5e18, "FLOP/s", 3, "1500 PFLOP/s"),  # past the largest prefix: no 1.5e+03
    (999.7e12, "FLOP/s", 3, "1 PFLOP/s"),  # rounds up into the next prefix, not "1e+03 TFLOP/s"
    (-3.2e9, "B/s", 3, "-3.2 GB/s"),
    (np.float64(1e13), "FLOP/s", 3, "10 TFLOP/s"),
])
def test_si_significant_digits(value: float, unit: str, digits: int, expected: str) -> None:
    assert si(value, unit, digits) == expected


@pytest.mark.parametrize(("value", "expected"), [
    (1.2e12, "1.20 TFLOP/s"),
    (4.8e15, "4.80 PFLOP/s"),
    (5e5, "500.00 kFLOP/s"),
    (999.996e9, "1.00 TFLOP/s"),
    (-2e6, "-2.00 MFLOP/s"),
])
def test_si_fixed_decimals(value: float, expected: str) -> None:
    assert si(value, "FLOP/s", decimals=2) == expected


@pytest.mark.parametrize(("value", "expected"), [
    (None, "-"), (math.nan, "-"), (np.nan, "-"), (0, "0 B/s"), (0.0, "0 B/s"), (-0.0, "0 B/s"),
    (math.inf, "inf"), (-math.inf, "-inf"),
])
def test_si_missing_zero_and_infinite(value: float | None, expected: str) -> None:
    assert si(value, "B/s") == expected
    assert si(value, "B/s", decimals=2) == expected


@pytest.mark.parametrize(("value", "expected"), [
    (2.1, "2.1 s"),
    (1500.0, "1500 s"),
    (0.0123, "12.3 ms"),
    (4.56e-5, "45.6 us"),
    (5e-7, "500 ns"),
    (0.9997, "1 s"),  # rounds up into seconds
    (-0.0123, "-12.3 ms"),
    (0, "0 s"),
    (None, "-"),
    (math.nan, "-"),
    (math.inf, "inf"),
])
def test_seconds(value: float | None, expected: str) -> None:
    assert seconds(value) == expected


def test_seconds_micro_symbol_and_decimals() -> None:
    assert seconds(4.2e-5, micro="µs") == "42 µs"
    assert seconds(4.2e-3, micro="µs") == "4.2 ms"
    assert seconds(1.234e-3, decimals=2) == "1.23 ms"
    assert seconds(2.1, decimals=2) == "2.10 s"
    assert seconds(4.56e-5, decimals=2) == "45.60 us"
    assert seconds(-1.5e-3, decimals=2) == "-1.50 ms"
    assert seconds(0.0, decimals=2) == "0 s"


@pytest.mark.parametrize(("value", "expected"), [
    (0.279, "27.9%"), (1.0, "100.0%"), (0.0, "0.0%"), (-0.05, "-5.0%"), (2.5, "250.0%"),
    (None, "-"), (math.nan, "-"),
])
def test_percent(value: float | None, expected: str) -> None:
    assert percent(value) == expected


def test_percent_decimals() -> None:
    assert percent(0.1234, decimals=2) == "12.34%"
    assert percent(0.5, decimals=0) == "50%"
