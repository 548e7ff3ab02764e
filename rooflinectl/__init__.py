"""rooflinectl: a roofline profiler and advisor for PyTorch and Triton code."""

from __future__ import annotations

from rooflinectl._version import __version__
from rooflinectl.api import Profile, load, profile
from rooflinectl.capture.region import region

__all__ = ["Profile", "__version__", "load", "profile", "region"]
