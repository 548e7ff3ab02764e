"""rooflinectl: a roofline profiler and advisor for PyTorch and Triton code."""

from __future__ import annotations

__version__ = "0.1.0"

from rooflinectl.api import Profile, load, profile  # noqa: E402
from rooflinectl.capture.region import region  # noqa: E402

__all__ = ["Profile", "__version__", "load", "profile", "region"]
