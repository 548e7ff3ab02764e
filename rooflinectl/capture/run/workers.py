"""Threads and child processes the profiled code starts: counted, because their work is not.

torch.profiler records the ops of the thread that started it (and of autograd's threads, which
inherit its state); a Python thread started by the script, a multiprocessing child or a
subprocess runs unseen. There is no public way to follow them (torch 2.13 exposes no
per-thread or global profiling state to Python), so the session counts them and the profile
says so instead of silently showing less work than ran. Counting wraps `threading.Thread.start`,
`multiprocessing.process.BaseProcess.start` and `subprocess.Popen.__init__` while the session
runs; each still does exactly what it did.
"""

from __future__ import annotations

import multiprocessing.process
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

PACKAGE_FOLDER = str(Path(__file__).resolve().parents[2])  # rooflinectl's own files: frames that are not the user's


def _from_user_code() -> bool:
    """The call came from outside rooflinectl (two frames up: the caller of the wrapper)."""
    return not sys._getframe(2).f_code.co_filename.startswith(PACKAGE_FOLDER)


@contextmanager
def counting_workers(counts: dict[str, Any]) -> Iterator[None]:
    """While the block runs, count into counts["threads_started"] and counts["processes_started"]."""
    counts.setdefault("threads_started", 0)
    counts.setdefault("processes_started", 0)
    originals = (threading.Thread.start, multiprocessing.process.BaseProcess.start, subprocess.Popen.__init__)
    thread_start, process_start, popen_init = originals

    def counted_thread_start(self: threading.Thread, *args: Any, **kwargs: Any) -> Any:
        if _from_user_code():
            counts["threads_started"] += 1
        return thread_start(self, *args, **kwargs)

    def counted_process_start(self: Any, *args: Any, **kwargs: Any) -> Any:
        if _from_user_code():
            counts["processes_started"] += 1
        return process_start(self, *args, **kwargs)

    def counted_popen_init(self: Any, *args: Any, **kwargs: Any) -> Any:
        if _from_user_code():
            counts["processes_started"] += 1
        return popen_init(self, *args, **kwargs)

    threading.Thread.start = counted_thread_start  # type: ignore[method-assign]
    multiprocessing.process.BaseProcess.start = counted_process_start  # type: ignore[method-assign]
    subprocess.Popen.__init__ = counted_popen_init  # type: ignore[method-assign]
    try:
        yield
    finally:
        threading.Thread.start, multiprocessing.process.BaseProcess.start, subprocess.Popen.__init__ = originals
