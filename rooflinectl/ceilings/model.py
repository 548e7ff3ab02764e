"""The ceilings a roofline is drawn against: memory roofs and one compute roof per precision.

A roof is a value with its unit in the name and a source ("spec", "spec-clock-scaled",
"measured", "estimate") so no chart or table shows a number without saying where it came from.
A compute roof also knows the SM clock it holds at (`clock_mhz`: the clock a spec roof was scaled
to, or the one NVML read while it was measured), so analysis can follow the clock a run ran at.
Compute roofs are keyed "<unit>.<precision>", unit being "tensor" (tensor cores) or "simt"
(CUDA cores, or a CPU's vector units): e.g. "tensor.bf16", "simt.fp32".
The compute roofs are ceilings: the clock-scaled spec peak (SMs x FLOP per clock x SM clock) where
the spec is known, so no kernel can beat them. What a library reaches (`ceilings --measure`) is the
achievable peak, kept apart in `achievable_flops_per_s` (a second, dashed line on the chart and
its own efficiency column); where no spec is known the measured best is both.
The memory level a kernel's bytes are held to (`memory_level` column): "dram", or the last-level
cache ("l2" on a GPU, "cache" on a CPU) when its footprint fits there (analysis/memory_levels.py).
Link roofs hold collectives (communication between devices): the bus bandwidth (nccl-tests'
busbw) an all-reduce reaches between this machine's GPUs, keyed by scope ("intra_node"; a
multi-node job would add "inter_node", docs/multi-node.md).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

# The level whose roof bounds a level the ceilings lack (profiles made before host roofs, or a peer
# link never measured): pageable copies can do no better than pinned ones, a host or peer copy no
# better than DRAM.
MEMORY_FALLBACK = {"host_pageable": "host_pinned", "peer": "host_pinned", "host_pinned": "dram"}


@dataclass(frozen=True)
class Roof:
    """One ceiling's value and where it came from (spec sheet, measured here, estimate)."""

    value: float  # bytes/s for memory roofs, FLOP/s for compute roofs
    source: str  # spec | spec-clock-scaled | measured | estimate
    note: str = ""
    clock_mhz: float | None = None  # compute roofs: the SM clock the value holds at (None: unknown)


@dataclass
class Ceilings:
    """What one device can do: memory bandwidth per level and compute peaks per unit and precision,
    each with its source, and the shortest kernel (the latency floor). A profile stores the
    ceilings its rows were placed against, so a profile reads the same on any machine."""

    device_name: str
    device_kind: str  # "cuda" or "cpu"
    memory_bytes_per_s: dict[str, Roof] = field(default_factory=dict)  # "dram", "l2", "l1"
    compute_flops_per_s: dict[str, Roof] = field(default_factory=dict)  # "tensor.bf16", ...
    kernel_floor_s: Roof = field(default_factory=lambda: Roof(2e-6, "estimate"))
    details: dict[str, Any] = field(default_factory=dict)  # clocks, SMs, what was read or not
    link_bytes_per_s: dict[str, Roof] = field(default_factory=dict)  # "intra_node": all-reduce busbw between GPUs
    achievable_flops_per_s: dict[str, Roof] = field(default_factory=dict)  # measured library peaks, same keys

    def cache_level(self) -> str:
        """The name of the last-level cache's memory level: "l2" on a GPU, "cache" on a CPU."""
        return "l2" if self.device_kind == "cuda" else "cache"

    def cache_bytes(self) -> float | None:
        """Capacity of the last-level cache (GPU L2, CPU LLC) from the detected device, bytes."""
        device = self.details.get("device")
        value = (device.get("l2_bytes") or device.get("llc_bytes")) if isinstance(device, dict) else None
        return float(value) if isinstance(value, (int, float)) and value > 0 else None

    def achievable_roof(self, unit: str, precision: str) -> Roof | None:
        """The measured achievable peak of the roof a precision is held to (None when not measured)."""
        key = self.compute_roof_key(unit, precision)
        return self.achievable_flops_per_s.get(key) if key is not None else None

    def dram(self) -> Roof:
        return self.memory_bytes_per_s["dram"]

    def memory_roof(self, level: str, *, fall_back: bool) -> Roof | None:
        """The roof of one memory level: measured or spec, else the estimate build.py left in
        details["level_estimates"] (L1 from SMs x bytes per clock). Without either, None, unless
        `fall_back`: then the roof of the level MEMORY_FALLBACK names, down to DRAM, an upper bound
        for placing work (a pageable copy is no faster than a pinned one, a host copy no faster
        than DRAM). Levels with no such bound (l1, l2: faster than DRAM) never fall back."""
        while True:
            if level in self.memory_bytes_per_s:
                return self.memory_bytes_per_s[level]
            estimate = self.details.get("level_estimates", {}).get(level)
            if isinstance(estimate, dict):
                return Roof(**estimate)
            if not fall_back or level not in MEMORY_FALLBACK:
                return None
            level = MEMORY_FALLBACK[level]

    def link(self) -> Roof | None:
        """The roof collectives are held against (bus bandwidth between this machine's GPUs)."""
        return self.link_bytes_per_s.get("intra_node")

    def compute_roof_key(self, unit: str, precision: str) -> str | None:
        """Which compute roof work of one precision on one unit is held against.

        Integer and bool element-wise work and half-precision SIMT math are held against the
        fp32 SIMT roof (their arithmetic runs in 32-bit lanes); a tensor precision the device
        lacks has no roof (None).
        """
        key = f"{unit}.{precision}"
        if key in self.compute_flops_per_s:
            return key
        if unit == "simt" and precision != "fp64" and "simt.fp32" in self.compute_flops_per_s:
            return "simt.fp32"
        return None

    def compute_roof(self, unit: str, precision: str) -> Roof | None:
        key = self.compute_roof_key(unit, precision)
        return self.compute_flops_per_s[key] if key is not None else None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Ceilings:
        return cls(
            device_name=str(data["device_name"]),
            device_kind=str(data["device_kind"]),
            memory_bytes_per_s={k: Roof(**v) for k, v in data.get("memory_bytes_per_s", {}).items()},
            compute_flops_per_s={k: Roof(**v) for k, v in data.get("compute_flops_per_s", {}).items()},
            kernel_floor_s=Roof(**data["kernel_floor_s"]) if "kernel_floor_s" in data else Roof(2e-6, "estimate"),
            details=dict(data.get("details", {})),
            link_bytes_per_s={k: Roof(**v) for k, v in (data.get("link_bytes_per_s") or {}).items()},
            achievable_flops_per_s={k: Roof(**v) for k, v in (data.get("achievable_flops_per_s") or {}).items()},
        )
