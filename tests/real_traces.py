"""The H200 traces under tests/data/h200_real/ and their ground truth: record.log's TIMING lines
(per-iteration CUDA-event times of each script's timed loop, measured in the same profiled run).
The kernel tables are read as `rooflinectl profile` reads its own traces: parsed by capture.read.trace,
attributed and grouped by today's pipeline, so the rows tests see are rows the pipeline produces."""

from __future__ import annotations

import copy
import functools
import gzip
import json
import re
import statistics
from pathlib import Path
from typing import Any

import pandas as pd

from rooflinectl.attribution.join import Attributed, attribute
from rooflinectl.capture.read.raw import RawTrace
from rooflinectl.capture.read.trace import from_chrome_trace
from rooflinectl.ceilings.model import Ceilings
from rooflinectl.pipeline import analyse_trace
from rooflinectl.profile_model import ProfileData

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


_TABLES: dict[tuple[str, tuple[str, ...], str], tuple[pd.DataFrame, dict[str, Any]]] = {}


def only_ops(trace: dict[str, Any], ops: tuple[str, ...]) -> dict[str, Any]:
    """The trace's events of these ops only: their cpu_op events, the kernels they launched and
    those kernels' launch calls (a training step's convolutions, without the rest of the step)."""
    events = trace["traceEvents"]
    ids = {e["args"]["External id"] for e in events if e.get("cat") == "cpu_op" and e.get("name") in ops}
    kernels = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
               and e.get("args", {}).get("External id") in ids]
    correlations = {e["args"]["correlation"] for e in kernels}
    kept = [e for e in events if (e.get("cat") == "cpu_op" and e["args"].get("External id") in ids)
            or (e.get("cat") in ("cuda_runtime", "cuda_driver") and e.get("args", {}).get("correlation") in correlations)]
    return {**trace, "traceEvents": kept + kernels}


def kernel_table(name: str, ceilings: Ceilings, ops: tuple[str, ...] = ()) -> tuple[pd.DataFrame, dict[str, Any]]:
    """(kernel table, summary) of a recorded run (of its `ops` only, when given), built by the
    pipeline once per run and ceilings in a test session (the larger traces take seconds); copies."""
    key = (name, ops, json.dumps(ceilings.to_dict(), sort_keys=True, default=str))
    if key not in _TABLES:
        raw = only_ops(raw_json(name), ops) if ops else raw_json(name)
        table, summary, _setup = analyse_trace(from_chrome_trace(raw), "cuda", {}, ceilings)
        _TABLES[key] = table, summary
    table, summary = _TABLES[key]
    return table.copy(), copy.deepcopy(summary)


def real_profile(name: str, ceilings: Ceilings, ops: tuple[str, ...] = ()) -> ProfileData:
    table, summary = kernel_table(name, ceilings, ops)
    meta = {"device_kind": "cuda", "device_name": ceilings.device_name}
    return ProfileData(kernels=table, ceilings=ceilings, metadata=meta, summary=summary)


def kernel_durations_us(name: str, op: str, dims: list[list[int]]) -> list[float]:
    """Durations of the kernels an op with these input dims launched, read from the raw events."""
    events = raw_json(name)["traceEvents"]
    ids = {e["args"]["External id"] for e in events
           if e.get("cat") == "cpu_op" and e.get("name") == op and e["args"].get("Input Dims", [])[:len(dims)] == dims}
    return [float(e["dur"]) for e in events if e.get("cat") == "kernel" and e["args"].get("External id") in ids]
