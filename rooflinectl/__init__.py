"""rooflinectl: a roofline profiler and advisor for PyTorch and Triton code."""

from __future__ import annotations

__version__ = "0.1.0"
