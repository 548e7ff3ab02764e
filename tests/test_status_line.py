"""The status line: phases reported by capture and analysis shown on a terminal's stderr only."""

from __future__ import annotations

import io

from rooflinectl.capture.progress import mark, report
from rooflinectl.cli.status import status_line


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _shown(monkeypatch, stream: io.StringIO, enabled: bool) -> str:
    monkeypatch.setattr("sys.stderr", stream)
    monkeypatch.setenv("TERM", "xterm-256color")  # rich draws no live line on a "dumb" terminal
    with status_line(enabled) as status:
        status.workload("profiling x.py (cpu)")
        mark("session: profiler start")  # a timing step: the status line leaves the program's start alone
        report("stopping the profiler")
        report("reading the trace (315 MB)")
    report("after the block: nobody listens")
    return stream.getvalue()


def test_phases_show_on_a_terminal(monkeypatch) -> None:
    text = _shown(monkeypatch, FakeTerminal(), enabled=True)
    assert "rooflinectl: profiling x.py (cpu)\n" in text
    assert "stopping the profiler" in text and "reading the trace (315 MB)" in text
    assert "nobody listens" not in text and "session:" not in text


def test_quiet_or_not_a_terminal_shows_nothing(monkeypatch) -> None:
    assert _shown(monkeypatch, FakeTerminal(), enabled=False) == ""
    assert _shown(monkeypatch, io.StringIO(), enabled=True) == ""


def test_phase_log_times_each_phase_from_process_start(monkeypatch, tmp_path) -> None:
    """ROOFLINECTL_PHASE_LOG: one JSON line per phase, also with -q (the benchmark runs quiet)."""
    import json
    import os
    import time

    log = tmp_path / "phases.jsonl"
    monkeypatch.setenv("ROOFLINECTL_PHASE_LOG", str(log))
    with status_line(False):
        mark("session: profiler start")
        report("stopping the profiler")
        time.sleep(0.05)
        report("reading the trace (1 MB)")
    report("after the block: nobody listens")
    marks = [json.loads(line) for line in log.read_text().splitlines()]
    assert [m["phase"] for m in marks] == ["running the workload", "session: profiler start", "stopping the profiler",
                                           "reading the trace (1 MB)", "done"]
    times = [m["t_s"] for m in marks]
    assert times == sorted(times) and times[3] - times[2] >= 0.045
    assert times[0] > 0.1  # counted from the process's start: at least the interpreter's and pytest's start-up
    assert all(m["rss_bytes"] > 10e6 for m in marks)
    assert {m["pid"] for m in marks} == {os.getpid()}
