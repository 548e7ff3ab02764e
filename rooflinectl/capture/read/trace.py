"""Read torch.profiler's exported Chrome trace into a RawTrace: from a dict, or from a file in
bounded memory (streamed in chunks, or by several processes for a large file).

The records are raw.py's, the keys read are spec.py's, and builder.py makes one from the other.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rooflinectl.capture.read.builder import TraceBuilder
from rooflinectl.capture.read.chrome_json import gc_paused, read_events
from rooflinectl.capture.read.identities import add_tensor_info
from rooflinectl.capture.read.raw import RawTrace
from rooflinectl.capture.read.spec import decode_events


def from_chrome_trace(trace: dict[str, Any], tensor_info: dict[tuple[str, int], dict[str, Any]] | None = None) -> RawTrace:
    """Parse an exported torch.profiler Chrome trace already decoded into a dict.

    tensor_info maps (op name, start time in ns of the profiler's clock) to {"storages": [...],
    "list_dtypes": [...], "list_dims": [...]} from the profiler's event tree (add_tensor_info).
    """
    builder = TraceBuilder()
    builder.add(trace.get("traceEvents", []) or [])
    raw = builder.finish(trace)
    if tensor_info:
        add_tensor_info(raw, tensor_info)
    return raw


def read_chrome_trace(path: str | Path, meanwhile: Callable[[], None] | None = None,
                      before_join: Callable[[list[int]], None] | None = None) -> RawTrace:
    """Parse a Chrome trace file (JSON, or gzipped JSON) in bounded memory: streamed in chunks,
    or for a large file on a machine with spare cores, by several processes at once
    (capture/read/trace_parallel.py; the same records). meanwhile: work of the caller's to do while
    the workers read (its imports, say), once; before reading when the file is read here.
    before_join: see read_parallel; called only when the workers read the file."""
    from rooflinectl.capture.read.trace_parallel import read_parallel, worker_count

    try:
        workers = worker_count(os.path.getsize(path))
    except OSError:
        workers = 0
    once = functools.cache(meanwhile) if meanwhile is not None else (lambda: None)  # a second call does nothing
    if workers >= 2:
        trace = read_parallel(path, workers, once, before_join)
        if trace is not None:
            return trace
    once()  # here if the workers did not run it (or could not read the file)
    top, chunks = read_events(path, decode_events)
    builder = TraceBuilder()
    with gc_paused():
        for events in chunks:
            builder.add(events)
        return builder.finish(top)

