"""One GPU measurement at a time on a machine: pytest-xdist workers (or two pytest sessions)
that profile the same GPU at once would each see the other's kernels and half the bandwidth.

A file lock (the `filelock` package, a dependency of torch) around each measurement and around
the session's ceilings measurement. CPU measurements take their own lock the same way: workers
timing CPU kernels at once would each measure a share of the cores. The lock files live in the
temp folder, one per device kind, so they serialise every session on the machine (all the GPUs
of a machine share one lock: a test may use any of them).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LOCK_TIMEOUT_S = 1800.0  # a GPU test suite waiting longer than this is stuck, not queued
LOCK_ENV = "ROOFLINECTL_PYTEST_LOCK"  # a lock file of one's own (e.g. on a shared /tmp)


def lock_path(device: str = "cuda") -> Path:
    """The lock of one device ("cuda", "cpu"): $ROOFLINECTL_PYTEST_LOCK (a suffix per device), else
    the temp folder."""
    env = os.environ.get(LOCK_ENV)
    return Path(f"{env}.{device}") if env else Path(tempfile.gettempdir()) / f"rooflinectl-pytest-{device}.lock"


class LockTimeout(RuntimeError):
    """Another process held the GPU lock longer than the timeout."""


@contextmanager
def measurement_lock(device: str = "cuda", timeout_s: float = LOCK_TIMEOUT_S) -> Iterator[Path]:
    """Hold the machine-wide measurement lock of a device while the block runs (waits for it, up
    to timeout_s)."""
    from filelock import FileLock, Timeout

    path = lock_path(device)
    lock = FileLock(str(path))
    try:
        lock.acquire(timeout=timeout_s)
    except Timeout:
        raise LockTimeout(f"another process held the measurement lock {path} for more than {timeout_s:g} s "
                          "(a stuck roofline test? delete the file if no pytest is running)") from None
    try:
        yield path
    finally:
        lock.release()
