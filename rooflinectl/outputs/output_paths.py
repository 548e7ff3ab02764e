"""Where a command may write: checked before any work is done, resolved before the script runs.

A profiled script may `os.chdir`, remove folders or take minutes: an output path is made
absolute first (a relative `-o` means the folder the command was started in), and every
problem that can be seen before the run (a folder, a parent that is a file or does not exist,
no permission, a read-only file system, the script itself, a source file, a file some other tool wrote) is one
sentence before the script starts, not a traceback after it ran.

One check for every writer (`checked_output`): profiles, traces, captures and reports alike.
- never written: the script, a source or config file, another output of the same command;
- not replaced without --force: an input of the same command, and a file rooflinectl did not
  write (a report may replace a report of its own kind: same first line);
- written into, never renamed over: a terminal, /dev/stdout, /dev/null, a FIFO, a device node
  (atomic.is_special_file).
"""

from __future__ import annotations

import gzip
import os
import sys
import tempfile
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

import click

from rooflinectl.atomic import is_special_file
from rooflinectl.errors import UsageError

# Never written over by a profile, trace or capture, whatever --force says: code and config.
SOURCE_SUFFIXES = frozenset({
    ".py", ".pyw", ".pyi", ".pyx", ".pxd", ".ipynb", ".c", ".cc", ".cpp", ".cxx", ".h", ".hpp", ".cu", ".cuh",
    ".sh", ".bash", ".toml", ".cfg", ".ini", ".yaml", ".yml", ".md", ".rst", ".txt", ".lock", ".in",
})
STDOUT = "-"


def _head(path: Path, size: int = 4096) -> str:
    """The start of a file as text (gzip unpacked), '' when it cannot be read."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(size)
        if raw[:2] == b"\x1f\x8b":
            with gzip.open(path, "rb") as handle:
                raw = handle.read(size)
        return raw.decode("utf-8", errors="replace")
    except (OSError, EOFError):
        return ""


def holds_marker(marker: str) -> Callable[[Path], bool]:
    """A test for 'a file of ours': its first 4 KiB contain marker (our files put it first)."""
    return lambda path: marker in _head(path)


def _first_existing(path: Path) -> Path:
    for candidate in [path, *path.parents]:
        if candidate.exists():
            return candidate
    return Path(path.anchor or ".")


def check_writable(target: Path, shown: str) -> None:
    """Raise one sentence when target cannot be created or replaced (tried, not guessed: root
    ignores permission bits, a read-only mount does not)."""
    if target.is_dir():
        raise UsageError(f"Cannot write {shown}: it is a folder; give a file name.")
    folder = _first_existing(target.parent)
    if not folder.is_dir():
        raise UsageError(f"Cannot write {shown}: {folder} is a file, not a folder.")
    if folder != target.parent:  # rooflinectl creates no folders: a typo in a path is said, not made
        raise UsageError(f"Cannot write {shown}: the folder {target.parent} does not exist; create it first.")
    try:
        fd, probe = tempfile.mkstemp(prefix=".rooflinectl-probe-", dir=folder)
    except OSError as exc:
        raise UsageError(f"Cannot write {shown}: {exc.strerror or exc} in {folder}.") from None
    os.close(fd)
    with suppress(OSError):
        os.unlink(probe)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return Path(os.path.realpath(a)) == Path(os.path.realpath(b))


def checked_output(path: str, *, what: str, ours: Callable[[Path], bool], script: Path | None = None,
                   force: bool = False, inputs: tuple[Path, ...] | list[Path] = (),
                   others: tuple[Path | None, ...] | list[Path | None] = ()) -> Path:
    """The absolute path to write `what` to, after refusing what must not be written:
    the script itself, another source file or another output of this command (always); an input
    of this command or a file that is not one of ours (unless force); a place that cannot be
    written. A special file (terminal, pipe, device) is returned as given: it is written into."""
    if not path.strip():
        raise UsageError(f"The {what} file name is empty: give a file name (or '-' for standard output).")
    if is_special_file(path):
        return Path(path)
    target = Path(os.path.abspath(os.path.expanduser(path)))
    real = Path(os.path.realpath(target))
    if script is not None and real == Path(os.path.realpath(script)):
        raise UsageError(f"Refusing to write the {what} to {path}: that is the script being profiled.")
    if real.suffix.lower() in SOURCE_SUFFIXES and what in ("profile", "trace", "capture"):
        raise UsageError(f"Refusing to write the {what} to {path}: a {real.suffix} file is source or "
                         "configuration, not a place for a profile; choose a .json name.")
    if any(other is not None and _same_file(real, Path(other)) for other in others):
        raise UsageError(f"Refusing to write the {what} to {path}: another output of this command goes there; "
                         "give each output its own name.")
    if not force and any(_same_file(real, Path(source)) for source in inputs):
        raise UsageError(f"Refusing to write the {what} to {path}: it is an input of this command "
                         "(--force replaces it).")
    if real.is_file() and not force and not ours(real):
        raise UsageError(f"Refusing to replace {path}: it is not a {what} rooflinectl wrote "
                         "(--force replaces it).")
    check_writable(real, path)
    return target


NCU_REPORT_SUFFIX = ".ncu-rep"


def checked_ncu_report(path: str, *, script: Path, others: list[Path], force: bool = False) -> Path:
    """The absolute path ncu will write its report to (ncu appends .ncu-rep to a name without it;
    we append it first, so the path checked is the path written), after refusing a folder, a place
    that cannot be written, the script and this command's other outputs, and an existing file
    unless force (nothing tells a report we asked for from the user's own; ncu refuses too)."""
    name = path if path.endswith(NCU_REPORT_SUFFIX) else path + NCU_REPORT_SUFFIX
    target = Path(os.path.abspath(os.path.expanduser(name)))
    real = Path(os.path.realpath(target))
    if real in {Path(os.path.realpath(p)) for p in [script, *others]}:
        raise UsageError(f"Refusing to write ncu's report to {name}: the script or another output of this "
                         "command is there; choose another --ncu-report name.")
    if real.exists() and not real.is_dir() and not force:
        raise UsageError(f"Refusing to replace {name}: it exists and may be a report of your own (--force "
                         "replaces it).")
    check_writable(real, name)
    return target


def fallback_path(name: str) -> Path:
    """Where a result goes when its own path failed after the work was done."""
    return Path(tempfile.gettempdir()) / f"rooflinectl-{os.getpid()}-{name}"


def _signature(text: str) -> str:
    """The start (12 characters) of a report's first line of substance: a CSV header, a Markdown
    title, a JSON report's first key, JUnit's <testsuites, a workflow command."""
    lines = (line.strip() for line in text.splitlines())
    return next((line[:12] for line in lines if len(line) > 3 and not line.startswith("<?xml")), "")


def same_report(text: str) -> Callable[[Path], bool]:
    """'A report of ours' for a report about to be written: an empty file, or one that starts as
    text does (the same kind of report, written by an earlier run)."""
    def ours(path: Path) -> bool:
        head = _head(path)
        return not head.strip() or (bool(_signature(text)) and _signature(head) == _signature(text))
    return ours


def write_text_output(text: str, output: str | None, *, inputs: tuple[Path, ...] | list[Path] = (),
                      force: bool = False) -> None:
    """Write a command's report: to stdout when output is None or '-', else to the file (checked:
    checked_output, with inputs the files the command read) atomically, or into it when it is a
    terminal, pipe or device."""
    from rooflinectl.atomic import write_atomic

    if output is None or output == STDOUT:
        click.echo(text, nl=False)
        sys.stdout.flush()
        return
    target = Path(output)
    if target.suffix.lower() in SOURCE_SUFFIXES and target.suffix.lower() not in (".md", ".txt"):
        raise UsageError(f"Refusing to write a report to {output}: a {target.suffix} file is source code.")
    write_atomic(checked_output(output, what="report", ours=same_report(text), inputs=inputs, force=force), text)
