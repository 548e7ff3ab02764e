"""Record the cost that Triton kernels declare through `@triton.jit(launch_metadata=fn)`.

Triton builds the launch-metadata dict only while a launch-enter hook is set (the same route
Proton uses). Per launch, in launch order, we keep what _summarise returns: the kernel name, its
FLOPs (in all and per declared width), bytes, precision, whether tensor cores run the math and
the declared op family. attribution/join.py matches the i-th launch of a name to the i-th traced
kernel of that name. A CUDA graph's replay runs no Python and calls no hook, so it adds nothing
here; a launch made while a stream was being captured into a graph is marked `captured`, and
attribution gives its cost to the kernels the graph's replays run (attribution/graph_costs.py).

A kernel that declares nothing still shows its arguments: capture/run/triton_args.py adds the bytes
its tensor arguments span to the dict, and _summarise keeps them as a minimum (`from_arguments`).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

FROM_ARGUMENTS = "bytes_from_arguments"  # the key capture/run/triton_args.py marks a cost from the arguments with
FLOP_KEYS = ("flops", "flops8", "flops16", "flops32", "flops64")
WIDTH_DTYPES = {"flops8": "fp8", "flops16": "fp16", "flops32": "fp32", "flops64": "fp64"}
HALF_DTYPES = ("fp16", "bf16")


def summarise_declaration(data: dict[str, Any]) -> dict[str, Any] | None:
    """What attribution needs from one launch's metadata: FLOPs per width as Proton reads them
    (flops8/16/32/64; plain `flops` has no width), bytes, the precision of the width with the
    most FLOPs, and whether the math runs on tensor cores.

    `tensor_cores` (bool) may be declared; without it, 8- and 16-bit FLOPs are taken to run on
    tensor cores (Triton does 8/16-bit arithmetic in tl.dot; its element-wise math upcasts to
    fp32) and 32/64-bit ones on CUDA cores. Proton holds every width against the tensor-core peak;
    we hold fp32 element-wise kernels to the CUDA-core roof unless they say otherwise. An
    optional `dtype` ("bf16") names the 16-bit format, and an optional `family` ("gemm",
    "attention", ...) what op the kernel is (kernels/cost.py documents both additions)."""
    if data.get(FROM_ARGUMENTS):
        return _from_arguments(data)
    flops = {k: float(data[k]) for k in FLOP_KEYS if k in data and data[k] is not None}
    if not flops and "bytes" not in data:
        return None
    widths = {WIDTH_DTYPES[k]: v for k, v in flops.items() if k in WIDTH_DTYPES}
    precision = max(widths, key=lambda w: widths[w]) if widths else ""
    counted = widths.get(precision, 0.0) > 0  # a zero-FLOP declaration (a copy) runs no math
    declared_dtype = str(data.get("dtype", "")).replace("torch.", "").replace("bfloat16", "bf16").replace("float16", "fp16")
    if precision == "fp16" and declared_dtype in HALF_DTYPES:
        precision = declared_dtype
    tensor_cores = data.get("tensor_cores")
    if not isinstance(tensor_cores, bool):
        tensor_cores = counted and precision in ("fp8", "fp16", "bf16")
    return {
        "name": str(data.get("name", "")),
        "flops": sum(flops.values()),
        "flops_by_width": widths,
        "bytes": float(data["bytes"]) if "bytes" in data else None,
        "precision": precision,
        "tensor_cores": tensor_cores,
        "family": str(data["family"]) if isinstance(data.get("family"), str) else "",
    }


def _from_arguments(data: dict[str, Any]) -> dict[str, Any] | None:
    """An undeclared launch's minimum bytes from its tensor arguments (capture/run/triton_args.py):
    FLOPs unknown (None), the widest argument's dtype as its precision."""
    if data.get("bytes") is None:
        return None
    return {"name": str(data.get("name", "")), "flops": None, "flops_by_width": {}, "bytes": float(data["bytes"]),
            "precision": str(data.get("dtype", "")), "tensor_cores": False, "family": "", "from_arguments": True,
            "shapes": data.get("shapes", [])}


def _identity(summary: dict[str, Any]) -> tuple[Any, ...]:
    """What tells two launches' summaries apart (a long run repeats a few hundred of them)."""
    return (summary["name"], summary["flops"], summary["bytes"], summary["precision"], summary["tensor_cores"],
            summary["family"], tuple(summary["flops_by_width"].items()), tuple(summary.get("shapes") or ()),
            summary.get("captured", False), summary.get("source"))


def _capturing() -> Callable[[], bool]:
    """torch.cuda.is_current_stream_capturing where CUDA is present, else a constant False."""
    import torch

    if not torch.cuda.is_available():
        return lambda: False
    # the C function torch.cuda.is_current_stream_capturing wraps: one Python frame less per launch
    return getattr(torch._C, "_cuda_isCurrentStreamCapturing", torch.cuda.is_current_stream_capturing)


@contextmanager
def triton_launches(sink: list[dict[str, Any]]) -> Iterator[None]:
    """While active, append each Triton launch's declared cost to `sink` (no-op without triton)."""
    if importlib.util.find_spec("triton") is None:
        yield
        return
    import triton

    from rooflinectl.capture.run.source_lines import launch_location
    from rooflinectl.capture.run.triton_args import (
        argument_bytes_recorded,  # torch: imported only to record
    )

    capturing = _capturing()

    interned: dict[tuple[Any, ...], dict[str, Any]] = {}  # one dict per distinct summary, not one per launch

    def hook(metadata: Any) -> None:
        data = metadata.get() if hasattr(metadata, "get") else dict(metadata or {})
        summary = summarise_declaration(data or {})
        if summary is not None:
            if capturing():  # into a CUDA graph: the kernel runs only when the graph replays
                summary["captured"] = True
            where = launch_location(f"triton {summary['name']}")  # the user's line launching it
            if where is not None:
                summary["source"] = where
            sink.append(interned.setdefault(_identity(summary), summary))

    with argument_bytes_recorded(), _hooked(triton, hook):
        yield


@contextmanager
def _hooked(triton: Any, hook: Callable[[Any], None]) -> Iterator[None]:
    """Install hook as Triton's launch-enter hook (by its version's route) while active."""
    knobs = getattr(triton, "knobs", None)
    runtime = getattr(knobs, "runtime", None)
    chain = getattr(runtime, "launch_enter_hook", None) if runtime is not None else None
    if chain is not None and hasattr(chain, "add"):
        chain.add(hook)
        try:
            yield
        finally:
            chain.remove(hook)
        return
    if runtime is not None and hasattr(runtime, "launch_enter_hook"):
        previous = runtime.launch_enter_hook
        runtime.launch_enter_hook = hook
        try:
            yield
        finally:
            runtime.launch_enter_hook = previous
        return
    from triton.compiler import CompiledKernel  # triton < 3.4

    previous = getattr(CompiledKernel, "launch_enter_hook", None)
    CompiledKernel.launch_enter_hook = hook
    try:
        yield
    finally:
        CompiledKernel.launch_enter_hook = previous
