"""Rebuilders of fixes that remove launches: many small expert GEMMs as one grouped GEMM, and a
function's launches replayed from a CUDA graph. One call of each version is a whole run (the
host's launches included, which kernel time does not show), so the measured difference counts
once per run the profile saw (Trial.runs).
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from rooflinectl.analysis.advice.common import cell_float
from rooflinectl.analysis.advice.registry import Finding
from rooflinectl.profile_sections import RunMetadata
from rooflinectl.verify import rebuild, tensors
from rooflinectl.verify.registry import NotRebuilt, Pair, Trial, rebuilds


def expert_rows(finding: Finding, kernels: pd.DataFrame) -> tuple[list[int], int, int, int]:
    """(rows per expert GEMM of one run, K, N, runs): each row's calls / runs GEMMs of its M,
    with runs the greatest common divisor of the rows' calls (experts of equal load share a row)."""
    rows = [kernels.iloc[r] for r in finding.rows if r < len(kernels)]
    dims = [rebuild._dims(row) for row in rows]
    if len({(d.k, d.n) for d in dims}) != 1 or any(d.batch > 1 for d in dims):
        raise NotRebuilt("the expert GEMMs do not share one [K, N] weight shape")
    calls = [max(int(cell_float(row, "calls", 1.0)), 1) for row in rows]
    runs = math.gcd(*calls)
    ms = [d.m for d, c in zip(dims, calls) for _ in range(c // runs)]
    return ms, dims[0].k, dims[0].n, runs


def loop_and_grouped(ms: list[int], k: int, n: int, dtype: torch.dtype) -> Pair:
    """A Python loop of one matmul per expert over its slice of the tokens (x[a:b] @ w[e].T), and
    one torch._grouped_mm over the same tokens and weights (offsets: the slices' ends)."""
    x = tensors.random_tensor(sum(ms), k, dtype=dtype)
    w = tensors.random_tensor(len(ms), n, k, dtype=dtype)  # [experts, N, K]: nn.Linear's layout
    ends = [sum(ms[:i + 1]) for i in range(len(ms))]
    bounds = list(zip([0, *ends[:-1]], ends))
    offs = torch.tensor(ends, device=tensors.DEVICE, dtype=torch.int32)
    return ((lambda: [x[a:b] @ w[e].t() for e, (a, b) in enumerate(bounds)]),
            (lambda: torch._grouped_mm(x, w.transpose(-2, -1), offs=offs)))


@rebuilds("moe.grouped-gemm")
def grouped(finding: Finding, kernels: pd.DataFrame) -> list[Trial]:
    """The run's expert GEMMs as a loop (as profiled) against one torch._grouped_mm (bf16 on
    sm_90 and later; where torch refuses, the verification says so)."""
    if not hasattr(torch, "_grouped_mm"):
        raise NotRebuilt("this torch has no torch._grouped_mm (PyTorch 2.8+)")
    ms, k, n, runs = expert_rows(finding, kernels)
    dtype = tensors.dtype_of(kernels.iloc[finding.rows[0]])
    size = torch.empty((), dtype=dtype).element_size()
    needed = 2 * (sum(ms) * (k + n) + len(ms) * k * n) * size
    profiled_s = sum(cell_float(kernels.iloc[r], "time_s", 0.0) for r in finding.rows if r < len(kernels))
    return [Trial(f"{len(ms)} expert GEMMs [M, {k}] x [{k}, {n}] (M {min(ms)}-{max(ms)}) in a loop vs one "
                  "torch._grouped_mm", lambda: loop_and_grouped(ms, k, n, dtype), profiled_s, needed,
                  runs=float(runs))]


def function_target(metadata: RunMetadata) -> tuple[Path, str]:
    """The FILE.py:FUNCTION the profile ran (function mode); NotRebuilt for a script or the API."""
    command = metadata.get("command") or []
    words = shlex.split(command) if isinstance(command, str) else [str(w) for w in command]
    for word in words:
        path, _, name = word.rpartition(":")
        if path.endswith(".py") and name.isidentifier():
            if not Path(path).is_file():
                raise NotRebuilt(f"the profiled function's file {path} is not here (run advise where it was profiled)")
            return Path(path), name
    raise NotRebuilt("only function mode (rooflinectl profile FILE.py:FUNCTION) can be replayed from a CUDA graph: "
                     "a script's step cannot be called apart from the script")


def eager_and_graph(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Pair:
    """The function called as profiled, and the same launches captured once in a CUDA graph and
    replayed (warmed up on a side stream first, as torch.cuda.graphs asks). A function that cannot
    be captured (a host synchronisation, a CPU tensor, dynamic shapes) raises torch's error here."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn(*args, **kwargs)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn(*args, **kwargs)
    return (lambda: fn(*args, **kwargs)), graph.replay


@rebuilds("launch.overhead")
def cuda_graph(finding: Finding, kernels: pd.DataFrame) -> list[Trial]:
    """Function mode: the profiled function called eagerly against its CUDA-graph replay, on the
    inputs its file's make_inputs() gives; the difference counts once per profiled iteration."""
    from rooflinectl.capture.run.runner import load_function

    metadata = kernels.attrs.get("metadata", {})
    summary = kernels.attrs.get("summary", {})
    path, name = function_target(metadata)
    iterations = float(summary.get("iterations") or metadata.get("iterations") or 1)

    def make() -> Pair:
        fn, args, kwargs = load_function(path, name)
        return eager_and_graph(fn, args, kwargs)

    window_s = float(finding.numbers.get("window_s", 0.0))
    return [Trial(f"{path.name}:{name} eager vs CUDA-graph replay", make, window_s, 0, runs=iterations)]
