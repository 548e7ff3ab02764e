"""One measured figure, as the measuring code reports it and the cache stores it."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

# Measurement keys and the roof each one feeds. Memory: "dram.read|copy|write", "l2.read", "l1.read",
# "cache.copy|triad" (a CPU's last-level cache),
# and the host link "host.htod_pinned|dtoh_pinned" (pinned memory), "host.htod_pageable|dtoh_pageable"
# (pageable: staged by the driver), "host.peer" (GPU to GPU). Compute: the Ceilings keys
# ("tensor.bf16", "simt.fp32", ...). Latency: "launch.*".
# Link: "link.all_reduce" (the best bus bandwidth), "link.all_reduce.<size in bytes>" (one per
# message size measured), "link.topology" (no value; what links the GPUs, in details).
MEMORY_LEVEL_OF = {
    "dram.read": "dram", "dram.copy": "dram", "dram.write": "dram", "dram.triad": "dram",
    "l2.read": "l2", "l1.read": "l1", "cache.copy": "cache", "cache.triad": "cache",
    "host.htod_pinned": "host_pinned", "host.dtoh_pinned": "host_pinned",
    "host.htod_pageable": "host_pageable", "host.dtoh_pageable": "host_pageable",
    "host.peer": "peer",
}
KERNEL_FLOOR_KEY = "launch.empty_kernel"  # GPU time of an empty kernel (profiler), seconds


@dataclass
class Measurement:
    key: str
    value: float | None  # None: could not be measured (note says why)
    unit: str  # bytes/s | flop/s | s
    method: str = ""  # how it was measured, in a few words
    note: str = ""  # why it is missing, or what to keep in mind
    clocks: dict[str, Any] = field(default_factory=dict)  # NVML snapshot taken while it ran
    details: dict[str, Any] = field(default_factory=dict)  # structured facts of the figure (link topology)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Measurement:
        value = data.get("value")
        return cls(
            key=str(data["key"]),
            value=None if value is None else float(value),
            unit=str(data.get("unit", "")),
            method=str(data.get("method", "")),
            note=str(data.get("note", "")),
            clocks=dict(data.get("clocks") or {}),
            details=dict(data.get("details") or {}),
        )


def kind_of(key: str) -> str:
    """memory, compute, latency or link, from a measurement key."""
    if key in MEMORY_LEVEL_OF:
        return "memory"
    if key.startswith("link."):
        return "link"
    if key.startswith("launch."):
        return "latency"
    return "compute"


Progress = Callable[[str, int, int], None]  # (step name, steps done, steps in all)
Step = tuple[str, Callable[[], "list[Measurement]"]]


def run_steps(steps: list[Step], *, budget_s: float, progress: Progress | None = None) -> list[Measurement]:
    """Run measurement steps in order until budget_s is spent; a step that fails or does not
    fit is recorded as a Measurement without value (note says why), never raised."""
    deadline = time.monotonic() + budget_s
    results: list[Measurement] = []
    for done, (name, step) in enumerate(steps):
        if progress:
            progress(name, done, len(steps))
        if time.monotonic() > deadline:
            results.append(Measurement(name, None, "", note=f"skipped: the {budget_s:.0f} s budget ran out"))
            continue
        try:
            results.extend(step())
        except Exception as exc:  # one broken path (a library, an OOM) must not lose the rest
            first = str(exc).splitlines()[0][:160] if str(exc) else ""
            results.append(Measurement(name, None, "", note=f"failed: {type(exc).__name__}: {first}"))
    if progress:
        progress("done", len(steps), len(steps))
    return results
