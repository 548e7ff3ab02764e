"""rooflinectl/atomic.py: no half file, and an overwritten file keeps its mode (issue 16, case 15)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from rooflinectl.atomic import atomic_file, write_atomic


def test_overwrite_keeps_the_file_mode(tmp_path: Path) -> None:
    target = tmp_path / "p.json"
    target.write_text("old")
    os.chmod(target, 0o600)
    write_atomic(target, "new")
    assert target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_new_file_follows_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        write_atomic(tmp_path / "n.json", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "n.json").stat().st_mode) == 0o640


def test_a_symlink_is_written_through(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    write_atomic(link, "new")
    assert link.is_symlink() and real.read_text() == "new"


def test_failure_leaves_the_old_file_and_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "p.json"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_file(target) as handle:
        handle.write("half")
        raise RuntimeError("crash")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.json"]


def test_a_missing_folder_is_an_error_not_made(tmp_path: Path) -> None:
    target = tmp_path / "typo" / "p.json"
    with pytest.raises(FileNotFoundError, match="the folder .*typo does not exist"):
        write_atomic(target, "x")
    assert not (tmp_path / "typo").exists()


def test_the_umask_is_never_read(tmp_path: Path, monkeypatch) -> None:
    """os.umask(0) then os.umask(old) to read it leaves a window where another thread creates files
    with mode 0666; the kernel applies the umask when the temp file is created instead."""
    def no_umask(_mask: int) -> int:
        raise AssertionError("os.umask called")

    old = os.umask(0o027)
    try:
        monkeypatch.setattr(os, "umask", no_umask)
        with atomic_file(tmp_path / "n.json") as handle:
            handle.write("x")
            temp = [p for p in tmp_path.iterdir() if p.name != "n.json"]
            assert [stat.S_IMODE(p.stat().st_mode) for p in temp] == [0o640]  # the final mode while written
    finally:
        monkeypatch.undo()
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "n.json").stat().st_mode) == 0o640


def test_an_existing_files_mode_holds_while_written(tmp_path: Path) -> None:
    target = tmp_path / "p.json"
    target.write_text("old")
    os.chmod(target, 0o604)
    with atomic_file(target) as handle:
        handle.write("new")
        temp = [p for p in tmp_path.iterdir() if p.name != "p.json"]
        assert [stat.S_IMODE(p.stat().st_mode) for p in temp] == [0o604]
    assert target.read_text() == "new" and stat.S_IMODE(target.stat().st_mode) == 0o604
