"""Threads and child processes the profiled code starts: counted, because their work is not.

torch.profiler records the ops of the thread that started it (and of autograd's threads, which
inherit its state); a Python thread started by the script, a multiprocessing child or a
subprocess runs unseen. There is no public way to follow them (torch 2.13 exposes no
per-thread or global profiling state to Python), so the session counts them and the profile
says so instead of silently showing less work than ran. Counting wraps `threading.Thread.start`,
`multiprocessing.process.BaseProcess.start` and `subprocess.Popen.__init__` while the session
runs; each still does exactly what it did. Threads and processes of our own (the status line, the
NVML sampler) and torch.compile's compile workers are not the user's work and are not counted.
"""

from __future__ import annotations

import multiprocessing.process
import os
import subprocess
import sys
import sysconfig
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

PACKAGE_FOLDER = str(Path(__file__).resolve().parents[2])  # rooflinectl's own files: frames that are not the user's
# Python's own library and installed packages: a frame there is passed through to whoever called it
LIBRARY_FOLDERS = tuple(sorted({sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
                               | {str(Path(threading.__file__).parent)}))
# torch.compile's machinery: its compile workers (Inductor's subprocess pool, Triton's compiler) do
# compilation, not the user's work, so they are never "work the profiler missed"
COMPILE_FOLDERS = tuple(os.path.join(*parts) + os.sep for parts in
                        (("torch", "_inductor"), ("torch", "_dynamo"), ("torch", "_functorch"), ("triton",)))


def _from_user_code() -> bool:
    """The thread or process is the user's: walking out from the caller of the wrapper, through
    library frames (stdlib, rich, concurrent.futures, a DataLoader), the first frame of code of its
    own is the user's, not rooflinectl's (the status line's refresh thread, the NVML sampler), and
    no frame on the way is torch.compile's (Inductor's compile workers)."""
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith(PACKAGE_FOLDER):
            return False
        if not (name.startswith("<") or name.startswith(LIBRARY_FOLDERS)):
            return True
        if any(part in name for part in COMPILE_FOLDERS):
            return False
        frame = frame.f_back
    return False


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
