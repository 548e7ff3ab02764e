"""Capability markers in one place: `gpu`, `triton` and `ncu` tests skip, with the reason,
where the machine lacks what they need (markers are declared in pyproject.toml)."""

from __future__ import annotations

import functools
import importlib.util
import shutil

import pytest


@functools.cache
def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def _missing(marker: str) -> str | None:
    """Why tests with this marker cannot run here, or None when they can."""
    if marker == "gpu" and not _cuda_available():
        return "needs a CUDA GPU (torch.cuda.is_available() is False)"
    if marker == "triton" and importlib.util.find_spec("triton") is None:
        return "needs triton (pip install triton)"
    if marker == "ncu" and shutil.which("ncu") is None:
        return "needs Nsight Compute: `ncu` is not on PATH"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        for marker in ("gpu", "triton", "ncu"):
            if item.get_closest_marker(marker) is not None:
                reason = _missing(marker)
                if reason:
                    item.add_marker(pytest.mark.skip(reason=reason))
