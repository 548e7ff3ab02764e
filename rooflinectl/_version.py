"""The package version, in a module of its own so that any stage can read it without importing
the package's __init__ (which imports the API, and so the whole pipeline).

Kept equal to `version` in pyproject.toml (tests/test_layering.py checks it).
"""

from __future__ import annotations

__version__ = "0.1.0"
