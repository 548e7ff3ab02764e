"""Copies: which link a memcpy crosses. One classifier for attribution (setup transfers, and
copies that mark no iteration) and analysis (the roof a copy is held against).

torch.profiler names each copy after CUPTI's memcpy kind and memory kinds, e.g.
"Memcpy HtoD (Pageable -> Device)", "Memcpy DtoH (Device -> Pinned)", "Memcpy PtoP (Device -> Device)".
CUPTI's kinds: H host, D device, A CUDA array (device memory), P peer (another device). A copy
between host and device (or array) is bound by the host link (PCIe or NVLink-C2C), never by DRAM;
from or to pageable memory the driver stages it through a pinned buffer, which is slower still.
A peer copy crosses the link between devices; DtoD, DtoA, AtoD and AtoA stay in one device's memory.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from rooflinectl.aggregate import flag_each_distinct

MEMCPY = re.compile(r"^Memcpy (?P<kind>[A-Za-z]+) \((?P<src>[^)]*?) -> (?P<dst>[^)]*)\)")
HOST_KINDS = ("HtoD", "DtoH", "HtoH", "HtoA", "AtoH")
PEER_KIND = "PtoP"


def copy_link(kernel: str) -> str | None:
    """host_pinned, host_pageable or peer: the link a memcpy crosses; None for work that stays in
    device memory (kernels, memsets, DtoD copies)."""
    match = MEMCPY.match(str(kernel))
    if match is None:
        return None
    kind = match.group("kind")
    if kind == PEER_KIND:
        return "peer"
    if kind not in HOST_KINDS:
        return None
    return "host_pageable" if "Pageable" in (match.group("src"), match.group("dst")) else "host_pinned"


def memory_level(kernel: str) -> str:
    """dram, host_pinned, host_pageable or peer: the memory level whose bandwidth bounds this kernel."""
    return copy_link(kernel) or "dram"


def crosses_link(kernels: pd.Series) -> np.ndarray:
    """Per kernel name, whether it is a copy over the host or peer link (classified once per
    distinct name: a run may hold a million launches of a few kernels)."""
    return flag_each_distinct(kernels, lambda name: copy_link(name) is not None)
