"""The status line of a long `profile`: on stderr, only on a terminal, never with -q.

While the user's program runs it gets one plain line (a live line redrawn under the program's
own output would overwrite what it prints, and wrapping its stdout would change what it sees);
from the moment the workload ends (stopping the profiler, exporting, reading and attributing
the trace, writing the profile) a live rich status with the phase and the elapsed time.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rooflinectl.capture.progress import listening


class StatusLine:
    """Shows phases reported through rooflinectl.capture.progress."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled and sys.stderr.isatty()
        self._live: Any = None
        self._spinner: Any = None
        self._text = ""
        self._start = time.perf_counter()

    def workload(self, text: str) -> None:
        """One plain line before the user's program runs."""
        if self.enabled:
            print(f"rooflinectl: {text}", file=sys.stderr, flush=True)

    def phase(self, text: str) -> None:
        if not self.enabled:
            return
        if self._live is None:
            from rich.console import Console
            from rich.live import Live
            from rich.spinner import Spinner

            self._start = time.perf_counter()
            self._spinner = Spinner("dots", text=self)  # the text is drawn by __rich__, with the time
            # no redirection of stdout/stderr: what the program or a late thread prints stays its own
            self._live = Live(self._spinner, console=Console(stderr=True), transient=True,
                              redirect_stdout=False, redirect_stderr=False, refresh_per_second=4)
            self._live.start()
        self._text = text
        self._live.refresh()

    def __rich__(self) -> Any:
        from rich.text import Text  # plain text: a file name is never read as rich markup

        return Text(f"rooflinectl: {self._text} ({time.perf_counter() - self._start:.0f} s)")

    def stop(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None


@contextmanager
def status_line(enabled: bool) -> Iterator[StatusLine]:
    """A StatusLine that follows the phases reported inside the block, cleared at its end."""
    line = StatusLine(enabled)
    try:
        with listening(line.phase):
            yield line
    finally:
        line.stop()
