"""`--save-trace`: torch.profiler's own Chrome trace, each kernel annotated with our numbers.

The file is a standard Chrome / Perfetto JSON trace (the one torch.profiler exports, which
Perfetto, chrome://tracing, TensorBoard's trace viewer and Holistic Trace Analysis read), with
every counted kernel event (on CPU: every counted op) given args under a `rooflinectl.` prefix:
its FLOPs and bytes (this launch's share of its op's cost), intensity, the roof at that
intensity, the time the work needs at the roof, the efficiency (roof time / duration, this
launch), what bounds it, the op and module it is charged to, and where the cost came from. Work
outside the counted steady state (weight upload, warm-up) is annotated too.
A top-level "rooflinectl" object holds the summary and says which tool wrote the file.
Renders only: the numbers come from attribution (per launch) and analysis (per row).
"""

from __future__ import annotations

import json
import math
import os
from collections import defaultdict, deque
from typing import Any

import pandas as pd

from rooflinectl.analysis.json_values import json_ready
from rooflinectl.attribution.group import GROUP_KEY
from rooflinectl.capture.read.spec import KERNEL_CATEGORIES
from rooflinectl.gzip_file import write_packed_text
from rooflinectl.profile_model import ProfileData
from rooflinectl.schema import TOOL_NAME, TRACE_MARKER_KEY

PREFIX = "rooflinectl."
MARKER_KEY = TRACE_MARKER_KEY


def _launch_args(launch: Any, row: pd.Series, data: ProfileData, duration_s: float) -> dict[str, Any]:
    """The args one kernel event gets: this launch's cost, placed against its row's roof (the
    memory level its row is held to), over the event's own duration (a CPU row's time also carries
    its share of the wrappers' overhead: attribution/cpu_work.py)."""
    flops, nbytes = float(launch.flops), float(launch.bytes)
    roof = data.ceilings.compute_roof(str(row["unit"]), str(row["precision"]))
    peak = roof.value if roof is not None else math.inf
    level = row.get("memory_level") if isinstance(row.get("memory_level"), str) else "dram"
    memory = data.ceilings.memory_roof(level, fall_back=True) or data.ceilings.dram()
    bandwidth = memory.value
    known = math.isfinite(flops) and math.isfinite(nbytes)
    bytes_only = math.isnan(flops) and math.isfinite(nbytes)  # FLOPs unknown: held to the memory roof
    roof_s = max(flops / peak, nbytes / bandwidth) if known else nbytes / bandwidth if bytes_only else math.nan
    intensity = flops / nbytes if known and nbytes > 0 else math.nan
    return {f"{PREFIX}{k}": v for k, v in json_ready({
        "flops": flops, "bytes": nbytes, "intensity_flop_per_byte": intensity,
        "attainable_flops_per_s": min(peak, intensity * bandwidth) if known and nbytes > 0 else math.nan,
        "roof_time_s": roof_s, "efficiency": roof_s / duration_s if (known or bytes_only) and duration_s > 0 else math.nan,
        "bound": row["bound"], "op": launch.op, "module": launch.module, "shapes": launch.shapes,
        "precision": f"{row['precision']}{'.tc' if row['unit'] == 'tensor' else ''}",
        "cost_source": launch.cost_source,
    }).items()}


def _ns(us: float, base_us: float) -> int:
    return int(round((float(us) - base_us) * 1000.0))  # the same clock as capture/read/builder.py


def annotate(trace: dict[str, Any], launches: pd.DataFrame, data: ProfileData) -> int:
    """Add our args to the trace's kernel events in place; returns how many were annotated.

    A launch is found by its name and start (nanoseconds from the trace's first event, as
    capture/read/builder.py computes them): GPU kernels among kernel events, CPU work among cpu_ops.
    """
    events = [e for e in trace.get("traceEvents", []) if e.get("ph") == "X"]
    timed = [float(e["ts"]) for e in events if "ts" in e]
    base_us = min(timed) if timed else 0.0
    categories = KERNEL_CATEGORIES if (launches["device"] == "cuda").any() else ("cpu_op",)
    by_start: dict[tuple[str, int], deque[dict[str, Any]]] = defaultdict(deque)
    for e in events:
        if e.get("cat") in categories and "ts" in e:
            by_start[(str(e.get("name", "")), _ns(e["ts"], base_us))].append(e)
    tables = [data.kernels]
    if data.setup_kernels is not None and not data.setup_kernels.empty:
        tables.append(data.setup_kernels)  # weight upload, warm-up: outside the counted work, annotated too
    rows: dict[tuple[Any, ...], pd.Series] = {}
    for table in reversed(tables):  # a group in both takes the counted work's row (its roof is the same)
        for i, key in enumerate(table[GROUP_KEY].itertuples(index=False, name=None)):
            rows[tuple(key)] = table.iloc[i]
    done = 0
    for launch in launches.itertuples(index=False):
        matches = by_start.get((launch.kernel, int(launch.start_ns)))
        row = rows.get(tuple(getattr(launch, k) for k in GROUP_KEY))
        if not matches or row is None:
            continue
        event = matches.popleft()
        duration_s = float(event.get("dur", 0.0) or 0.0) / 1e6
        event.setdefault("args", {}).update(_launch_args(launch, row, data, duration_s))
        done += 1
    summary = json_ready({k: v for k, v in data.summary.items() if k != "launch_sequence"})
    marker = {"tool": TOOL_NAME, "tool_version": data.metadata.get("tool_version"),
              "device": data.ceilings.device_name, "annotated_events": done, "summary": summary,
              "args": "kernel events carry rooflinectl.flops, .bytes, .efficiency, .bound, ... in their args"}
    trace_items = {k: v for k, v in trace.items() if k != MARKER_KEY}
    trace.clear()
    trace.update({MARKER_KEY: marker, **trace_items})  # first, so a reader of the head sees whose file it is
    return done


def write_trace(trace: dict[str, Any], path: str | os.PathLike[str]) -> None:
    """JSON, gzipped when the name ends in .gz (Perfetto and TensorBoard open both)."""
    write_packed_text(path, json.dumps(trace, allow_nan=False))
