"""capture/run/session.py: torch.profiler's temp trace (gigabytes on a long run) is removed on every
path, also when reading it fails, and kept only when the session is asked to (keep_trace_file)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import torch

from rooflinectl.capture.run import session


def _traces(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("rooflinectl-trace-*"))


@pytest.fixture
def temp_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where export_trace_file's mkstemp writes
    return tmp_path


def _run(keep_trace_file: bool = False) -> session.Capture:
    with session.profiling("cpu", keep_trace_file=keep_trace_file) as capture:
        torch.randn(16, 16) @ torch.randn(16, 16)
    return capture


@pytest.mark.parametrize("failing", ["read_trace", "deliver_exports"])
def test_the_temp_trace_goes_when_reading_it_fails(temp_folder: Path, monkeypatch, failing: str) -> None:
    def fail(*_args, **_kwargs):
        assert _traces(temp_folder), "the trace was exported before this step"
        raise RuntimeError("late failure")

    monkeypatch.setattr(session, failing, fail)
    with pytest.raises(RuntimeError, match="late failure"):
        _run()
    assert _traces(temp_folder) == []


def test_the_temp_trace_goes_after_a_clean_run(temp_folder: Path) -> None:
    capture = _run()
    assert capture.trace is not None and capture.chrome_trace_path is None
    assert _traces(temp_folder) == []


def test_a_kept_trace_stays_for_the_caller(temp_folder: Path) -> None:
    capture = _run(keep_trace_file=True)
    assert capture.chrome_trace_path is not None and Path(capture.chrome_trace_path).is_file()
    Path(capture.chrome_trace_path).unlink()


def test_the_profilers_events_are_let_go_once_the_trace_is_read(temp_folder: Path, monkeypatch) -> None:
    """torch's profile object is freed only by a cyclic collection, which analysis keeps paused:
    its events (gigabytes on a long run) must be dropped as soon as the trace and the tensor
    identities are read, not held through attribution. The trace read from them stays whole."""
    import gc

    seen: list[torch.profiler.profile] = []
    let_go = session.let_go_of_events

    def watching(prof: torch.profiler.profile) -> None:
        assert prof.profiler.kineto_results is not None  # the identities were read while they lived
        seen.append(prof)
        let_go(prof)

    monkeypatch.setattr(session, "let_go_of_events", watching)
    gc.disable()  # as during a long analysis: the cycle around the profile object is not collected
    try:
        capture = _run()
        assert len(seen) == 1 and seen[0].profiler.kineto_results is None
    finally:
        gc.enable()
    assert capture.trace is not None and any(op.name == "aten::mm" for op in capture.trace.ops)


def test_with_reading_workers_identities_are_read_and_events_freed_before_the_join(temp_folder: Path,
                                                                                   monkeypatch) -> None:
    """When worker processes read the trace, the tensor identities come from the profiler's event
    tree before any of their records is joined, and the events are freed then: x * x still reads
    x once, x * y twice, and no record was joined while the events lived."""
    from rooflinectl.attribution.join import attribute
    from rooflinectl.capture.read import trace_parallel

    monkeypatch.setenv("ROOFLINECTL_READ_WORKERS", "2")
    profilers: list[torch.profiler.profile] = []
    let_go = session.let_go_of_events
    monkeypatch.setattr(session, "let_go_of_events", lambda prof: profilers.append(prof) or let_go(prof))
    events_alive_at_join: list[bool] = []
    real_add = trace_parallel._Joiner.add

    def add(self, part):
        events_alive_at_join.append(not profilers or profilers[0].profiler.kineto_results is not None)
        return real_add(self, part)

    monkeypatch.setattr(trace_parallel._Joiner, "add", add)
    x, y = torch.randn(64, 64), torch.randn(64, 64)
    with session.profiling("cpu") as capture:
        for _ in range(3):
            x * x
            x * y
    assert events_alive_at_join and not any(events_alive_at_join)  # the workers' path, joined after the free
    launches = attribute(capture.trace, "cpu", capture.metadata).launches
    muls = launches[launches["op"] == "aten::mul"]
    assert sorted(muls["bytes"]) == [2 * 64 * 64 * 4] * 3 + [3 * 64 * 64 * 4] * 3
