"""Keep third-party log noise off the user's screen.

torch 2.13's kineto logs `USDT:... profiler_start` / `profiler_stop` (and, with a higher log
level, `STAGE:` / `INFO:` lines) from C++ straight to file descriptor 2 when a profiler session
starts and stops; neither KINETO_LOG_LEVEL nor TORCH_CPP_LOG_LEVEL silences those two (checked
with torch 2.13 on CPU). So fd 2 is redirected around our own start() and stop() calls only, and
whatever else was written there meanwhile is passed on unchanged.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress

# kineto's own line format: LEVEL:YYYY-MM-DD HH:MM:SS pid:tid File.cpp:line] text
KINETO_NOISE = re.compile(r"^(USDT|STAGE|INFO):\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \d+:\d+ \S+:\d+\] ")


def drop_kineto_noise(text: str) -> str:
    """The text without kineto's USDT/STAGE/INFO lines."""
    return "".join(line for line in text.splitlines(keepends=True) if not KINETO_NOISE.match(line))


@contextmanager
def kineto_noise_filtered() -> Iterator[None]:
    """Run the block with fd 2 sent to a temp file, then write back all but kineto's noise."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):  # no fd 2 to redirect (embedded interpreter)
        yield
        return
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            rest = drop_kineto_noise(sink.read().decode("utf-8", errors="replace"))
            if rest:
                with suppress(OSError):
                    os.write(2, rest.encode("utf-8"))
