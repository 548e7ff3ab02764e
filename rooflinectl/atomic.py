"""Every file rooflinectl writes goes through here: a temp file in the same folder, then a
rename, so a crash or Ctrl-C never leaves half a profile, trace, cache or chart. A utility of no
stage: capture, ceilings and outputs all use it.

No folder is created here: a missing one is an error the caller states (outputs/output_paths.py
checks before the work; a folder of our own, such as the ceilings cache, its owner creates).

What is not a regular file (a terminal, /dev/stdout, /dev/null, a FIFO, a device node) is written
into, never replaced: a rename over /dev/full would swap the system's device for a file. A full
disk, a file size limit or a quota is one sentence (errors.OutputWriteError, exit 6), with the
temp file removed."""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from rooflinectl.errors import NO_ROOM, no_room_error

NEW_FILE_MODE = 0o666  # less the umask, applied by the kernel at creation: a file like any the user's tools write


@contextmanager
def atomic_file(path: str | os.PathLike[str], *, binary: bool = False) -> Iterator[IO[Any]]:
    """Yield a handle to write; the target appears only once the block has finished cleanly.

    An existing file keeps its permission bits (a 0600 profile stays 0600) and a symlink is
    written through (the link stays, its target gets the new content). A missing folder raises
    FileNotFoundError naming it."""
    if is_special_file(path):
        with _written_into(path, binary) as handle:
            yield handle
        return
    target = Path(os.path.realpath(path))
    if not target.parent.is_dir():
        raise FileNotFoundError(errno.ENOENT, f"the folder {target.parent} does not exist", str(target))
    fd, tmp = _create_temp(target)
    try:
        with os.fdopen(fd, "wb" if binary else "w", **_TEXT_OPTIONS[binary]) as handle:
            yield handle
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        if exc.errno in NO_ROOM:
            raise no_room_error(exc, path) from None
        raise
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# text goes out as UTF-8; a character UTF-8 cannot hold (a lone surrogate) as its \u escape, never a crash
_TEXT_OPTIONS: dict[bool, dict[str, str]] = {True: {}, False: {"encoding": "utf-8", "errors": "backslashreplace"}}


def is_special_file(path: str | os.PathLike[str]) -> bool:
    """Whether path exists and is not a regular file or a folder: a terminal, a pipe, a device
    node, a socket (/dev/stdout, /dev/null, a FIFO): written into, never renamed over."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


@contextmanager
def _written_into(path: str | os.PathLike[str], binary: bool) -> Iterator[IO[Any]]:
    """Write straight into a special file (no temp file: it has no folder of its own to rename in)."""
    try:
        with open(path, "wb" if binary else "w", **_TEXT_OPTIONS[binary]) as handle:
            yield handle
    except OSError as exc:
        if exc.errno in NO_ROOM:
            raise no_room_error(exc, path) from None
        raise


def _create_temp(target: Path) -> tuple[int, str]:
    """A new temp file beside target, with its final mode from the start: the existing file's, else
    NEW_FILE_MODE less the umask (the kernel applies it: no os.umask() read, which races threads)."""
    try:
        keep: int | None = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        keep = None
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        tmp = str(target.parent / f".{target.name}.{secrets.token_hex(4)}.tmp{target.suffix}")
        try:
            fd = os.open(tmp, flags, 0o600 if keep is not None else NEW_FILE_MODE)
        except FileExistsError:
            continue
        if keep is not None:
            try:
                os.fchmod(fd, keep)
            except BaseException:
                os.close(fd)
                Path(tmp).unlink(missing_ok=True)
                raise
        return fd, tmp
    raise FileExistsError(errno.EEXIST, "no free temporary file name", str(target.parent))


def write_atomic(path: str | os.PathLike[str], text: str) -> None:
    with atomic_file(path) as handle:
        handle.write(text)
