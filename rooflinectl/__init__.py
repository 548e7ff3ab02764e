"""rooflinectl: a roofline profiler and advisor for PyTorch and Triton code."""

from __future__ import annotations

import importlib
from typing import Any

from rooflinectl._version import __version__

# The public names, imported on first use: `rooflinectl --version` and Tab completion must not
# pay for importing torch and pandas (seconds) just because the package was imported.
_PUBLIC = {"Profile": "rooflinectl.api", "load": "rooflinectl.api", "profile": "rooflinectl.api",
           "region": "rooflinectl.capture.run.region", "trace_handler": "rooflinectl.api"}

__all__ = ["Profile", "__version__", "load", "profile", "region", "trace_handler"]


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module 'rooflinectl' has no attribute {name!r}")
    value = getattr(importlib.import_module(_PUBLIC[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names only (what tab completion in a notebook offers), not our imports."""
    return sorted(__all__)
