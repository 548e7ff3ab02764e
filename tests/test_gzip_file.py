"""The one gzip-or-plain writer (rooflinectl/gzip_file.py): chosen by the name, atomic either way."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from rooflinectl.gzip_file import atomic_packed, write_packed_text


def test_gzip_by_name_plain_otherwise(tmp_path: Path) -> None:
    text = '{"traceEvents": [], "name": "héllo"}'
    write_packed_text(tmp_path / "t.json.gz", text)
    write_packed_text(tmp_path / "t.json", text)
    assert (tmp_path / "t.json.gz").read_bytes()[:2] == b"\x1f\x8b"  # gzip's magic number
    assert gzip.decompress((tmp_path / "t.json.gz").read_bytes()).decode("utf-8") == text
    assert (tmp_path / "t.json").read_text(encoding="utf-8") == text


def test_a_failed_write_leaves_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "t.json.gz"
    write_packed_text(target, "old")
    with pytest.raises(RuntimeError), atomic_packed(target) as handle:
        handle.write(b"half")
        raise RuntimeError("late error")
    assert gzip.decompress(target.read_bytes()) == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.json.gz"]  # no temp file left
