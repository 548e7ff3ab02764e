"""Theoretical occupancy from a kernel's launch configuration, and the GPU's architecture.

The calculation is the CUDA occupancy calculator's (cuda_occupancy.h): blocks resident per SM
are limited by warps, by the block count, by registers (allocated per warp in units of 256, from
the four sub-partitions of the register file) and by shared memory (allocated in units of 128
bytes, plus the runtime's reserved 1 KiB per block from compute capability 8.0); occupancy is
resident warps / the SM's maximum. Where we differ: the shared-memory carve-out is taken at its
largest (the driver may choose a smaller one), so a shared-memory limit is never overstated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from rooflinectl.ceilings.model import Ceilings
from rooflinectl.ceilings.sm_limits import SmLimits, capability_of_rates, sm_limits
from rooflinectl.ceilings.specs import match_spec

WARP_SIZE = 32


@dataclass(frozen=True)
class Occupancy:
    """Blocks and warps one SM holds at once for a launch configuration, and what limits them."""

    blocks_per_sm: int
    warps_per_sm: int
    occupancy: float  # resident warps / the SM's maximum warps
    limiter: str  # warps, blocks, registers or shared memory
    limits: dict[str, int]  # blocks per SM each resource allows


def _round_up(value: float, unit: int) -> int:
    return int(math.ceil(value / unit) * unit)


def occupancy(limits: SmLimits, threads_per_block: float, registers_per_thread: float,
              shared_bytes_per_block: float) -> Occupancy | None:
    """The theoretical occupancy of one launch configuration, None when a figure is missing."""
    figures = (threads_per_block, registers_per_thread, shared_bytes_per_block)
    if any(f is None or not math.isfinite(f) for f in figures) or threads_per_block <= 0:
        return None
    warps_per_block = math.ceil(threads_per_block / WARP_SIZE)
    by: dict[str, int] = {
        "warps": limits.max_warps // warps_per_block,
        "blocks": limits.max_blocks,
    }
    if registers_per_thread > 0:
        per_warp = _round_up(registers_per_thread * WARP_SIZE, limits.register_unit)
        warps_per_partition = (limits.registers // limits.sub_partitions) // per_warp
        by["registers"] = (warps_per_partition * limits.sub_partitions) // warps_per_block
    per_block = shared_bytes_per_block + limits.reserved_shared_bytes_per_block
    if shared_bytes_per_block > 0 and per_block > 0:
        by["shared memory"] = limits.shared_bytes // _round_up(per_block, limits.shared_unit_bytes)
    limiter = min(by, key=lambda k: (by[k], list(by).index(k)))
    blocks = max(0, by[limiter])
    warps = blocks * warps_per_block
    return Occupancy(blocks_per_sm=blocks, warps_per_sm=warps, occupancy=warps / limits.max_warps,
                     limiter=limiter, limits=by)


def compute_capability(ceilings: Ceilings) -> tuple[int, int] | None:
    """The GPU's compute capability: as detected, else its rate family's, else its spec entry's."""
    device = ceilings.details.get("device")
    found: Any = device.get("compute_capability") if isinstance(device, dict) else None
    if isinstance(found, (list, tuple)) and len(found) == 2:
        return int(found[0]), int(found[1])
    from_rates = capability_of_rates(ceilings.details.get("rates"))
    if from_rates is not None:
        return from_rates
    spec = match_spec(ceilings.device_name) if ceilings.device_kind == "cuda" else None
    return capability_of_rates(spec.rates) if spec else None


def device_limits(ceilings: Ceilings) -> SmLimits | None:
    """The SM limits of the profiled GPU, None on a CPU or an architecture the table lacks."""
    return sm_limits(compute_capability(ceilings)) if ceilings.device_kind == "cuda" else None
