"""Record the cost that Triton kernels declare through `@triton.jit(launch_metadata=fn)`.

Triton builds the launch-metadata dict only while a launch-enter hook is set (the same route
Proton uses). We keep (kernel name, FLOPs, bytes) per launch, in launch order; attribution
matches the i-th launch of a name to the i-th traced kernel of that name. Launches replayed by
a CUDA graph do not call hooks, so graph-replayed Triton kernels show no declared cost.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

FLOP_KEYS = ("flops", "flops8", "flops16", "flops32", "flops64")


def _summarise(data: dict[str, Any]) -> dict[str, Any] | None:
    flops = {k: float(data[k]) for k in FLOP_KEYS if k in data}
    if not flops and "bytes" not in data:
        return None
    precision = {"flops8": "fp8", "flops16": "fp16", "flops32": "fp32", "flops64": "fp64"}
    widths = [precision[k] for k in flops if k in precision]
    return {
        "name": str(data.get("name", "")),
        "flops": sum(flops.values()),
        "bytes": float(data["bytes"]) if "bytes" in data else None,
        "precision": widths[0] if len(widths) == 1 else "",
    }


@contextmanager
def triton_launches(sink: list[dict[str, Any]]) -> Iterator[None]:
    """While active, append each Triton launch's declared cost to `sink` (no-op without triton)."""
    if importlib.util.find_spec("triton") is None:
        yield
        return
    import triton

    def hook(metadata: Any) -> None:
        data = metadata.get() if hasattr(metadata, "get") else dict(metadata or {})
        summary = _summarise(data or {})
        if summary is not None:
            sink.append(summary)

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
