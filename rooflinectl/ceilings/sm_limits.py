"""What one streaming multiprocessor holds at once, per compute capability: the limits occupancy
is computed from (registers, shared memory, warps and blocks resident per SM).

Source: CUDA C++ Programming Guide, "Technical Specifications per Compute Capability"
(https://docs.nvidia.com/cuda/cuda-c-programming-guide/#features-and-technical-specifications),
and the allocation rules of the CUDA occupancy calculator (cuda_occupancy.h): registers are
allocated per warp in units of 256, from four sub-partitions of the register file; shared memory
in units of 128 bytes, plus 1 KiB the runtime reserves per block from compute capability 8.0 on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class SmLimits:
    """Resident resources of one SM of a compute capability."""

    max_warps: int
    max_blocks: int
    registers: int = 65536
    shared_bytes: int = 0  # usable by blocks of one SM (the largest carve-out)
    register_unit: int = 256  # registers are allocated per warp in units of this many
    sub_partitions: int = 4  # the register file is split between the SM's schedulers
    shared_unit_bytes: int = 128
    reserved_shared_bytes_per_block: int = 0


KIB = 1024
SM_LIMITS: dict[tuple[int, int], SmLimits] = {
    (7, 0): SmLimits(max_warps=64, max_blocks=32, shared_bytes=96 * KIB, shared_unit_bytes=256),
    (7, 2): SmLimits(max_warps=64, max_blocks=32, shared_bytes=96 * KIB, shared_unit_bytes=256),
    (7, 5): SmLimits(max_warps=32, max_blocks=16, shared_bytes=64 * KIB, shared_unit_bytes=256),
    (8, 0): SmLimits(max_warps=64, max_blocks=32, shared_bytes=164 * KIB, reserved_shared_bytes_per_block=KIB),
    (8, 6): SmLimits(max_warps=48, max_blocks=16, shared_bytes=100 * KIB, reserved_shared_bytes_per_block=KIB),
    (8, 7): SmLimits(max_warps=48, max_blocks=16, shared_bytes=164 * KIB, reserved_shared_bytes_per_block=KIB),
    (8, 9): SmLimits(max_warps=48, max_blocks=24, shared_bytes=100 * KIB, reserved_shared_bytes_per_block=KIB),
    (9, 0): SmLimits(max_warps=64, max_blocks=32, shared_bytes=228 * KIB, reserved_shared_bytes_per_block=KIB),
    (10, 0): SmLimits(max_warps=64, max_blocks=32, shared_bytes=228 * KIB, reserved_shared_bytes_per_block=KIB),
    (12, 0): SmLimits(max_warps=48, max_blocks=32, shared_bytes=100 * KIB, reserved_shared_bytes_per_block=KIB),
}


def sm_limits(compute_capability: tuple[int, int] | None) -> SmLimits | None:
    """The limits of a compute capability, None for one the table does not hold."""
    if compute_capability is None:
        return None
    return SM_LIMITS.get((int(compute_capability[0]), int(compute_capability[1])))


def capability_of_rates(rates: str | None) -> tuple[int, int] | None:
    """"sm90" -> (9, 0), "sm86-geforce" -> (8, 6): the rate family's compute capability."""
    found = re.match(r"sm(\d+?)(\d)(?:\b|-)", rates or "")
    return (int(found.group(1)), int(found.group(2))) if found else None
