"""Chrome traces in torch.profiler's format for shapes the committed H200 traces do not hold.

Each launch is what the real traces show for one op (tests/data/h200_real, e.g. moe_loop's
aten::mm): a `cpu_op` event with Input Dims / Input type / Input Strides and an External id, its
`cuda_runtime` launch call and its `kernel` event with the same correlation, grid, block,
registers per thread and shared memory. The rows tests see come from these events through the
real parser and pipeline (capture.read.trace.from_chrome_trace, pipeline.analyse_trace), so they are
rows `rooflinectl profile` would produce for such a run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from rooflinectl.capture.read.trace import from_chrome_trace
from rooflinectl.ceilings.model import Ceilings
from rooflinectl.pipeline import analyse_trace
from rooflinectl.profile_model import ProfileData

TYPES = {"bf16": "c10::BFloat16", "fp16": "c10::Half", "fp32": "float", "int8": "signed char"}


@dataclass
class Launch:
    """One op and the kernel it launched."""

    op: str
    dims: list[list[int]]
    kernel: str
    dur_us: float
    dtype: str = "bf16"
    grid: tuple[int, int, int] = (132, 1, 1)
    block: tuple[int, int, int] = (384, 1, 1)
    registers: int = 168
    shared: int = 0
    types: list[str] = field(default_factory=list)  # default: every input of dtype


def _strides(dims: list[int]) -> list[int]:
    return [math.prod(dims[i + 1:]) for i in range(len(dims))]


def chrome_trace(launches: list[Launch], gap_us: float = 2.0) -> dict[str, Any]:
    """A trace with the launches one after the other on one stream."""
    events: list[dict[str, Any]] = []
    ts = 1_000.0
    for n, launch in enumerate(launches, 1):
        types = launch.types or [TYPES[launch.dtype]] * len(launch.dims)
        events.append({"ph": "X", "cat": "cpu_op", "name": launch.op, "pid": 1, "tid": 1, "ts": ts, "dur": 10.0,
                       "args": {"External id": n, "Input Dims": launch.dims, "Input type": types,
                                "Input Strides": [_strides(d) for d in launch.dims],
                                "Concrete Inputs": [""] * len(launch.dims)}})
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                       "ts": ts + 1.0, "dur": 5.0, "args": {"External id": n, "correlation": 10_000 + n}})
        start = ts + 8.0
        blocks = math.prod(launch.grid)
        events.append({"ph": "X", "cat": "kernel", "name": launch.kernel, "pid": 0, "tid": 7, "ts": start,
                       "dur": launch.dur_us,
                       "args": {"External id": n, "device": 0, "stream": 7, "correlation": 10_000 + n,
                                "registers per thread": launch.registers, "shared memory": launch.shared,
                                "blocks per SM": blocks / 132, "grid": list(launch.grid), "block": list(launch.block)}})
        ts = start + launch.dur_us + gap_us
    return {"traceEvents": events, "baseTimeNanoseconds": 0}


def traced_table(launches: list[Launch], ceilings: Ceilings) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The whole trace counted (no iterations looked for: these traces are one short run)."""
    table, summary, _setup = analyse_trace(from_chrome_trace(chrome_trace(launches)), "cuda", {}, ceilings,
                                           iterations_mode="none")
    return table, summary


def traced_profile(launches: list[Launch], ceilings: Ceilings) -> ProfileData:
    table, summary = traced_table(launches, ceilings)
    return ProfileData(kernels=table, ceilings=ceilings, summary=summary,
                       metadata={"device_kind": "cuda", "device_name": ceilings.device_name})
