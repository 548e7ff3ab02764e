"""`rooflinectl.region(name)`: limit what is counted to the code inside it.

A region is a profiler annotation with a reserved prefix; outside a profiling run it costs one
record_function enter/exit (about a microsecond) and changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

REGION_PREFIX = "rooflinectl.region:"
MODULE_PREFIX = "rooflinectl.module:"
CALIBRATION_NAME = "rooflinectl.calibration"  # the profiler-overhead probe: never counted
WARMUP_NAME = "rooflinectl.warmup"  # function mode's warm-up calls: recorded (a CUDA graph's capture), never counted


@contextmanager
def region(name: str) -> Iterator[None]:
    """Count only the work inside `with region(...)` blocks (all of them, if there are several)."""
    with torch.profiler.record_function(f"{REGION_PREFIX}{name}"):
        yield
