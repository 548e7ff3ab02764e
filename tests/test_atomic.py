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
