"""The status line: phases reported by capture and analysis shown on a terminal's stderr only."""

from __future__ import annotations

import io

from rooflinectl.capture.progress import report
from rooflinectl.cli.status import status_line


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _shown(monkeypatch, stream: io.StringIO, enabled: bool) -> str:
    monkeypatch.setattr("sys.stderr", stream)
    monkeypatch.setenv("TERM", "xterm-256color")  # rich draws no live line on a "dumb" terminal
    with status_line(enabled) as status:
        status.workload("profiling x.py (cpu)")
        report("stopping the profiler")
        report("reading the trace (315 MB)")
    report("after the block: nobody listens")
    return stream.getvalue()


def test_phases_show_on_a_terminal(monkeypatch) -> None:
    text = _shown(monkeypatch, FakeTerminal(), enabled=True)
    assert "rooflinectl: profiling x.py (cpu)\n" in text
    assert "stopping the profiler" in text and "reading the trace (315 MB)" in text
    assert "nobody listens" not in text


def test_quiet_or_not_a_terminal_shows_nothing(monkeypatch) -> None:
    assert _shown(monkeypatch, FakeTerminal(), enabled=False) == ""
    assert _shown(monkeypatch, io.StringIO(), enabled=True) == ""
