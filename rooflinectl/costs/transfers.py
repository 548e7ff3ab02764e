"""Costs of memsets and memcpys: the bytes the trace records for them, no FLOPs.

Which kind a transfer is (the copy's link, in-device or not) is read from the kernel's name by
attribution (attribution/transfers.py); what it moves is here: an in-device copy reads and writes
its bytes (twice the size), a memset writes them, a host-device or peer copy transfers them once
(bound by PCIe/C2C or the link between GPUs, not DRAM).
"""

from __future__ import annotations

from rooflinectl.costs.registry import OpCost

TRANSFER_KINDS = {  # kind -> (bytes per byte of size, what the note says)
    "memset": (1, "memset: bytes written"),
    "device_copy": (2, "device copy: bytes read and written"),
    "peer_copy": (1, "peer copy: bytes transferred (bound by the link between GPUs, not DRAM)"),
    "host_copy": (1, "host-device copy: bytes transferred (PCIe/C2C bound, not DRAM)"),
}


def transfer_cost(kind: str, size_bytes: float) -> OpCost:
    """A memset's or memcpy's cost from its size in the trace; a kind not in TRANSFER_KINDS raises."""
    factor, what = TRANSFER_KINDS[kind]
    return OpCost(0.0, float(factor * size_bytes), "copy", "", f"{what}, size from the trace")
