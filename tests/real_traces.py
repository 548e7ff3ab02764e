"""The H200 traces under tests/data/h200_real/ and their ground truth: record.log's TIMING lines
(per-iteration CUDA-event times of each script's timed loop, measured in the same profiled run)."""

from __future__ import annotations

import functools
import gzip
import json
import re
import statistics
from pathlib import Path

from rooflinectl.attribution.join import Attributed, attribute
from rooflinectl.capture.trace import RawTrace, from_chrome_trace

REAL = Path(__file__).parent / "data" / "h200_real"


@functools.cache
def raw_json(name: str) -> dict:
    with gzip.open(REAL / f"{name}.trace.json.gz", "rt", encoding="utf-8") as handle:
        return json.load(handle)


def trace(name: str) -> RawTrace:
    """A fresh RawTrace each call (tests may edit its ops)."""
    return from_chrome_trace(raw_json(name))


@functools.cache
def attributed(name: str) -> tuple[RawTrace, Attributed]:
    t = trace(name)
    return t, attribute(t, "cuda", {})


@functools.cache
def timing() -> dict[str, list[dict]]:
    """Trace name -> the TIMING records printed by its run (one per rank), from record.log."""
    out: dict[str, list[dict]] = {}
    name = None
    for line in (REAL / "record.log").read_text(encoding="utf-8").splitlines():
        if line.startswith("== "):
            match = re.search(r"/([\w.{}]+)\.trace\.json\.gz", line)
            name = match.group(1) if match else None
        elif line.startswith("TIMING ") and name:
            record = json.loads(line[len("TIMING "):])
            key = name.replace("{RANK}", str(record.get("rank", "")))
            out.setdefault(key, []).append(record)
    return out


def timed_median_s(name: str) -> float:
    """Median CUDA-event time of one iteration of the script's timed loop, seconds."""
    (record,) = timing()[name]
    return statistics.median(record["iter_ms"]) / 1e3


def timed_steps(name: str) -> int:
    (record,) = timing()[name]
    return len(record["iter_ms"])
