"""Host transfers: which link a memcpy crosses, and the roof it is held against.

torch.profiler names each copy after CUPTI's memcpy kind and memory kinds, e.g.
"Memcpy HtoD (Pageable -> Device)", "Memcpy DtoH (Device -> Pinned)", "Memcpy PtoP (Device -> Device)".
A copy between host and device is bound by the host link (PCIe or NVLink-C2C), never by DRAM;
from or to pageable memory the driver stages it through a pinned buffer, which is slower still.
"""

from __future__ import annotations

import re

from rooflinectl.ceilings.model import Ceilings, Roof

MEMCPY = re.compile(r"^Memcpy (?P<kind>[A-Za-z]+) \((?P<src>[^)]*?) -> (?P<dst>[^)]*)\)")
HOST_KINDS = ("HtoD", "DtoH", "HtoH", "HtoA", "AtoH")
# Which roof a level falls back to when the ceilings lack it (profiles made before host roofs,
# or a peer link never measured): pageable copies can do no better than pinned ones.
FALLBACK = {"host_pageable": "host_pinned", "peer": "host_pinned", "host_pinned": "dram"}


def memory_level(kernel: str) -> str:
    """dram, host_pinned, host_pageable or peer: the link whose bandwidth bounds this kernel."""
    match = MEMCPY.match(str(kernel))
    if match is None:
        return "dram"
    kind = match.group("kind")
    if kind == "PtoP":
        return "peer"
    if kind not in HOST_KINDS:
        return "dram"
    return "host_pageable" if "Pageable" in (match.group("src"), match.group("dst")) else "host_pinned"


def level_roof(ceilings: Ceilings, level: str) -> tuple[str, Roof]:
    """The roof of a memory level, following FALLBACK when the ceilings do not have it."""
    while level not in ceilings.memory_bytes_per_s and level in FALLBACK:
        level = FALLBACK[level]
    return level, ceilings.memory_bytes_per_s.get(level) or ceilings.dram()
