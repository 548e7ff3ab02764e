"""capture/session.py: torch.profiler's temp trace (gigabytes on a long run) is removed on every
path, also when reading it fails, and kept only under keeping_chrome_traces()."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import torch

from rooflinectl.capture import session


def _traces(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("rooflinectl-trace-*"))


@pytest.fixture
def temp_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where export_trace_file's mkstemp writes
    return tmp_path


def _run() -> session.Capture:
    with session.profiling("cpu") as capture:
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
    with session.keeping_chrome_traces():
        capture = _run()
    assert capture.chrome_trace_path is not None and Path(capture.chrome_trace_path).is_file()
    Path(capture.chrome_trace_path).unlink()
