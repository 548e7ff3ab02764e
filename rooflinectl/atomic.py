"""Every file rooflinectl writes goes through here: a temp file in the same folder, then a
rename, so a crash or Ctrl-C never leaves half a profile, trace, cache or chart. A utility of no
stage: capture, ceilings and outputs all use it."""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any


@contextmanager
def atomic_file(path: str | os.PathLike[str], *, binary: bool = False) -> Iterator[IO[Any]]:
    """Yield a handle to write; the target appears only once the block has finished cleanly.

    An existing file keeps its permission bits (a 0600 profile stays 0600) and a symlink is
    written through (the link stays, its target gets the new content)."""
    target = Path(os.path.realpath(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=f".tmp{target.suffix}", dir=target.parent)
    try:
        with os.fdopen(fd, "wb" if binary else "w", **({} if binary else {"encoding": "utf-8"})) as handle:
            yield handle
        os.chmod(tmp, _mode_for(target))
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _mode_for(target: Path) -> int:
    """The existing file's mode, else 0666 less the umask (mkstemp creates 0600; profiles and
    charts are shared like any file the user's tools write)."""
    try:
        return stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def write_atomic(path: str | os.PathLike[str], text: str) -> None:
    with atomic_file(path) as handle:
        handle.write(text)
