"""`profile -o -`: standard output carries the profile's JSON, so the script's own output goes
to stderr while it runs (else `rooflinectl profile x.py -o - | jq` reads the script's prints
before the JSON and fails).

Both levels are moved: `sys.stdout` (Python's print) and, when standard output is a real file
descriptor, fd 1 itself (C extensions' printf, `os.write(1, ...)`, child processes). Both are
restored after the run; a hard exit during the run (os._exit, SIGTERM) still writes the profile
to the real standard output through the stream this yields.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import TextIO


def _flush_c_stdio() -> None:
    """Flush the C library's stdout buffer (printf from an extension), so it lands where it was meant to."""
    with suppress(Exception):  # no libc to load (not Linux/macOS): nothing buffered there by us
        ctypes.CDLL(None).fflush(None)


def _fileno(stream: TextIO) -> int | None:
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError):  # a test runner's buffer, a closed stream
        return None


@contextmanager
def script_stdout_to_stderr() -> Iterator[TextIO]:
    """Within the block, what is written to standard output goes to standard error; yields a
    stream that still writes to the real standard output."""
    real = sys.stdout
    real.flush()
    out_fd, err_fd = _fileno(real), _fileno(sys.stderr)
    saved_fd: int | None = None
    stream: TextIO = real
    if out_fd is not None and err_fd is not None and out_fd != err_fd:
        _flush_c_stdio()
        saved_fd = os.dup(out_fd)
        stream = os.fdopen(os.dup(saved_fd), "w", encoding="utf-8")
        os.dup2(err_fd, out_fd)
    sys.stdout = sys.stderr
    try:
        yield stream
    finally:
        with suppress(Exception):  # the script may have closed or replaced its streams
            sys.stderr.flush()
        _flush_c_stdio()
        sys.stdout = real
        if saved_fd is not None and out_fd is not None:
            os.dup2(saved_fd, out_fd)
            os.close(saved_fd)
            stream.close()
