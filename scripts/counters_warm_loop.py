"""Two loops for the warm-cache counters (issue 29), profiled as FILE.py:FUNCTION targets:

    rooflinectl profile scripts/counters_warm_loop.py:small --counters ncu   # 16 MB fp32: L2-served
    rooflinectl profile scripts/counters_warm_loop.py:big --counters ncu     # 1 GiB fp32: DRAM

Each kernel reads the tensor the kernel before it wrote (in-place mul_ and add_ on one tensor):
16 MB stays in the H200's 60 MB L2 between kernels, 1 GiB cannot. With the caches flushed (ncu's
default) both read their whole tensor from DRAM; with the caches as the loop leaves them only the
large one does. Used by tests/test_counters_warm_gpu.py and scripts/gpu.d/75-counters-warm.sh.
"""

from __future__ import annotations

import torch

SMALL_ELEMENTS = 4 * 1024 * 1024  # 16 MiB of fp32
BIG_ELEMENTS = 256 * 1024 * 1024  # 1 GiB of fp32
_tensors: dict[str, torch.Tensor] = {}


def _tensor(name: str, elements: int) -> torch.Tensor:
    if name not in _tensors:
        _tensors[name] = torch.ones(elements, device="cuda" if torch.cuda.is_available() else "cpu")
    return _tensors[name]


def _loop(x: torch.Tensor, repeats: int) -> None:
    for _ in range(repeats):
        x.mul_(0.999)  # reads what add_ wrote, writes it back
        x.add_(1e-3)  # reads what mul_ wrote


def small() -> None:
    """16 MiB fp32, updated in place eight times: the footprint fits L2."""
    _loop(_tensor("small", SMALL_ELEMENTS), 4)


def big() -> None:
    """1 GiB fp32, updated in place twice: every pass streams through DRAM."""
    _loop(_tensor("big", BIG_ELEMENTS), 1)
