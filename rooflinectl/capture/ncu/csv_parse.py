"""Nsight Compute's CSV (`--csv --page raw --print-units base`): one MeasuredLaunch per row.

The text holds ncu's own `==PROF==`/`==WARNING==` lines, then a header row ("ID", "Process ID",
..., "Kernel Name", ..., "Block Size", "Grid Size", metric columns), a units row, and one row
per profiled launch in profiling order. Numbers carry thousands separators ("10,496"); the raw
page adds hundreds of device__attribute_* and launch__* columns, which are ignored.
"""

from __future__ import annotations

import csv
import io
import re

from rooflinectl.capture.ncu.metrics import ALL_METRICS, MeasuredLaunch, measured_launch

_TRIPLE = re.compile(r"^\(?\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)?$")


class NcuOutputError(ValueError):
    """The text holds no CSV table of ncu results."""


def parse_number(text: str) -> float | None:
    """'10,496' -> 10496.0; '' or 'n/a' -> None."""
    cleaned = text.replace(",", "").strip()
    if not cleaned:
        return None
    try:
        return float(cleaned)
    except ValueError:
        return None


def parse_triple(text: str) -> tuple[int, int, int] | None:
    """'(256, 1, 1)' -> (256, 1, 1)."""
    match = _TRIPLE.match(text.strip())
    return (int(match.group(1)), int(match.group(2)), int(match.group(3))) if match else None


def csv_rows(text: str) -> list[dict[str, str]]:
    """The data rows of the first ncu result table in text (units row dropped)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID",')), None)
    if start is None:
        raise NcuOutputError("no result table (no header row starting with \"ID\")")
    body = [line for line in lines[start:] if line.strip() and not line.startswith("==")]
    rows = list(csv.DictReader(io.StringIO("\n".join(body))))
    return [r for r in rows if str(r.get("ID", "")).strip().isdigit()]


def measured_launches(text: str) -> list[MeasuredLaunch]:
    """Every profiled launch in the text, in profiling order (ncu's ID)."""
    rows = sorted(csv_rows(text), key=lambda r: int(r["ID"]))
    out = []
    for row in rows:
        values = {}
        for metric in ALL_METRICS:
            number = parse_number(row.get(metric) or "")
            if number is not None:
                values[metric] = number
        out.append(measured_launch(str(row.get("Kernel Name", "")), parse_triple(row.get("Grid Size", "")),
                                   parse_triple(row.get("Block Size", "")), values))
    return out
