"""The status line of a long `profile`: on stderr, only on a terminal, never with -q.

While the user's program runs it gets one plain line (a live line redrawn under the program's
own output would overwrite what it prints, and wrapping its stdout would change what it sees);
from the moment the workload ends (stopping the profiler, exporting, reading and attributing
the trace, writing the profile) a live rich status with the phase and the elapsed time.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

from rooflinectl.capture.progress import listening, noticing


class StatusLine:
    """Shows phases reported through rooflinectl.capture.progress."""

    def __init__(self, enabled: bool, notices: bool = True) -> None:
        self.enabled = enabled and sys.stderr.isatty()
        self.notices = notices
        self._live: Any = None
        self._spinner: Any = None
        self._text = ""
        self._start = time.perf_counter()

    def workload(self, text: str) -> None:
        """One plain line before the user's program runs."""
        if self.enabled:
            print(f"rooflinectl: {text}", file=sys.stderr, flush=True)

    def notice(self, text: str) -> None:
        """A one-line notice from the run (taking over the script's profiler): on stderr, terminal
        or not, unless quiet."""
        if not self.notices:
            return
        if self._live is not None:
            self._live.console.print(f"rooflinectl: {text}", markup=False, highlight=False)
        else:
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


PHASE_LOG_ENV = "ROOFLINECTL_PHASE_LOG"


def _process_age_s() -> float | None:
    """Seconds since this process started (Linux /proc), so a phase log counts the start-up too."""
    try:
        with open("/proc/self/stat") as f:
            start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            uptime_s = float(f.read().split()[0])
        return uptime_s - start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def _rss_bytes() -> int | None:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


class PhaseLog:
    """With ROOFLINECTL_PHASE_LOG=FILE, one JSON line per phase appended to FILE: seconds since the
    process started, resident memory, phase, process id. How scripts/bench_scale.py sees where a long profile's
    time and memory go; a diagnostic, so a file that cannot be written is ignored."""

    def __init__(self, path: str) -> None:
        self.path = path
        age_s = _process_age_s()
        self._t0 = time.perf_counter() - (age_s if age_s is not None else 0.0)

    def __call__(self, phase: str) -> None:
        line = json.dumps({"t_s": round(time.perf_counter() - self._t0, 3), "rss_bytes": _rss_bytes(), "phase": phase,
                           "pid": os.getpid()})  # the ranks of a distributed job may share the file
        try:
            with open(self.path, "a") as f:
                f.write(line + "\n")
        except OSError:
            pass


@contextmanager
def status_line(enabled: bool, notices: bool = True) -> Iterator[StatusLine]:
    """A StatusLine that follows the phases reported inside the block, cleared at its end, and
    says the run's notices (unless not notices: -q)."""
    line = StatusLine(enabled, notices)
    log_path = os.environ.get(PHASE_LOG_ENV)
    log = PhaseLog(log_path) if log_path else None
    try:
        with listening(line.phase), noticing(line.notice), (listening(log, marks=True) if log else nullcontext()):
            if log:
                log("running the workload")
            yield line
            if log:
                log("done")
    finally:
        line.stop()
