"""`rooflinectl.region(name)`: limit what is counted to the code inside it.

A region is a profiler annotation with a reserved prefix; outside a profiling run it costs one
record_function enter/exit (about a microsecond) and changes nothing.

In the counters run (the program run again under Nsight Compute, capture/ncu/child.py), the
outermost region also calls cudaProfilerStart/Stop: ncu runs with --profile-from-start off, so
it sees, numbers and measures only the launches inside regions, the ones the profile counts.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import torch

from rooflinectl.capture.read.spec import MODULE_PREFIX as TRACE_MODULE_PREFIX

REGION_PREFIX = "rooflinectl.region:"
MODULE_PREFIX = TRACE_MODULE_PREFIX  # nn.Module scopes: defined where the trace parser reads them
CALIBRATION_NAME = "rooflinectl.calibration"  # the profiler-overhead probe: never counted
WARMUP_NAME = "rooflinectl.warmup"  # function mode's warm-up calls: recorded (a CUDA graph's capture), never counted


class _CounterRanges:
    """Depth of nested regions while the counters run has armed them (process-wide, like the
    CUDA profiler API it drives)."""

    def __init__(self) -> None:
        self.armed = False
        self.depth = 0
        self.lock = threading.Lock()

    def enter(self) -> None:
        if not self.armed:  # the ordinary case: no lock, no CUDA call
            return
        with self.lock:
            if self.armed:
                self.depth += 1
                if self.depth == 1:
                    torch.cuda.profiler.start()

    def exit(self) -> None:
        if not self.armed:
            return
        with self.lock:
            if self.armed and self.depth > 0:
                self.depth -= 1
                if self.depth == 0:
                    torch.cuda.profiler.stop()


COUNTER_RANGES = _CounterRanges()


def arm_counter_ranges(armed: bool) -> None:
    """Let regions start and stop the CUDA profiler (the counters child only; without CUDA there
    is nothing to count and regions stay plain annotations)."""
    with COUNTER_RANGES.lock:
        COUNTER_RANGES.armed = armed and torch.cuda.is_available()


@contextmanager
def region(name: str) -> Iterator[None]:
    """Count only the work inside `with region(...)` blocks (all of them, if there are several)."""
    with torch.profiler.record_function(f"{REGION_PREFIX}{name}"):
        COUNTER_RANGES.enter()
        try:
            yield
        finally:
            COUNTER_RANGES.exit()
