"""A script's own torch.profiler, while rooflinectl profiles it: cooperate instead of crashing.

Two kineto sessions in one process do not nest: a script that starts its own
`torch.profiler.profile` (context manager, manual start/stop, schedule and prof.step()) or the
legacy `torch.autograd.profiler.profile` under rooflinectl ended in a segfault (torch 2.13, CPU).
Every one of them starts its session through `torch.autograd.profiler.profile`, looked up at run
time (torch.profiler.profile builds one per cycle). While our session runs, that name gives a
stand-in that starts no second session; everything above it is torch's own code, so the script's
control flow, its `schedule`, `on_trace_ready` and the `ProfilerStep#N` annotations of prof.step()
(recorded into our session, where iteration detection sees them) behave as they would. The
stand-in's side of the script's profiler:
- `export_chrome_trace(path)` writes a valid Chrome trace holding a note at once; when our session
  ends the note is replaced by the session's own trace (the whole run, the script's annotations
  included), unless the script has changed the file since;
- `key_averages()` / `events()` are empty (the figures are in rooflinectl's profile).
Outside a session the name gives torch's own class. A legacy profiler class the script bound
before the stand-in was in place cannot be replaced: starting it inside our session raises one
sentence instead of crashing the process.
"""

from __future__ import annotations

import gzip
import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch.autograd.profiler as autograd_profiler
from torch.autograd.profiler_util import EventList

from rooflinectl.atomic import write_atomic
from rooflinectl.capture.progress import notice
from rooflinectl.errors import UsageError
from rooflinectl.gzip_file import atomic_packed, is_gzip_name, write_packed_text

REAL_AUTOGRAD_PROFILE = autograd_profiler.profile
NOTE = ("This run was profiled by rooflinectl, which stood in for the script's torch.profiler (two "
        "profiler sessions cannot nest). When the run ends this file is replaced by rooflinectl's "
        "trace of the whole run; the kernel table is in rooflinectl's profile.")

TAKEN_OVER = "took over the script's torch.profiler; its export gets our trace"  # said once a run
_state: dict[str, Any] = {"installed": 0, "cooperating": False, "exports": [], "noticed": False}


def _note_trace() -> str:
    return json.dumps({"traceEvents": [{"ph": "i", "s": "g", "name": NOTE, "ts": 0, "pid": 0, "tid": 0}],
                       "rooflinectl_note": NOTE})


def _write_note(path: str) -> None:
    write_packed_text(path, _note_trace())
    _state["exports"].append(str(Path(path).resolve()))


def _still_our_note(path: Path) -> bool:
    try:
        opener = gzip.open if is_gzip_name(path) else open
        with opener(path, "rt", encoding="utf-8") as handle:
            return handle.read(len(NOTE) * 2 + 200) == _note_trace()
    except (OSError, UnicodeDecodeError, EOFError):
        return False


def deliver_exports(chrome_trace_path: str | None) -> list[str]:
    """Replace each note the script's exports wrote by our trace; returns the files written."""
    done: list[str] = []
    targets, _state["exports"] = list(dict.fromkeys(_state["exports"])), []
    if chrome_trace_path is None:
        return done
    for target in map(Path, targets):
        if not _still_our_note(target):
            continue  # the script wrote it over since: its file now, not ours
        with open(chrome_trace_path, "rb") as source, atomic_packed(target) as handle:
            shutil.copyfileobj(source, handle)
        done.append(str(target))
    return done


class CooperatingProfile:
    """Stands in for torch.autograd.profiler.profile while our session runs (see the module)."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        enabled = kwargs.get("enabled", args[0] if args else True)
        if not _state["cooperating"] or enabled is False:  # no session of ours, or a disabled profiler
            return REAL_AUTOGRAD_PROFILE(*args, **kwargs)
        return super().__new__(cls)

    def __init__(self, *_args: Any, **_options: Any) -> None:
        if not _state["noticed"]:  # torch.profiler.profile builds one per cycle: said once
            _state["noticed"] = True
            notice(TAKEN_OVER)
        self.entered = False
        self.trace_id = None
        self._stats = None
        self.function_events = EventList([])
        self.self_cpu_time_total = 0.0

    def __enter__(self) -> CooperatingProfile:
        self.entered = True
        return self

    def __exit__(self, *_exc: object) -> None:
        self.entered = False

    def _prepare_trace(self) -> None:
        self.entered = True

    def _start_trace(self) -> None:
        self.entered = True

    def export_chrome_trace(self, path: str, *_args: Any, **_kwargs: Any) -> None:
        _write_note(str(path))

    def export_stacks(self, path: str, *_args: Any, **_kwargs: Any) -> None:
        write_atomic(path, "")

    def key_averages(self, *_args: Any, **_kwargs: Any) -> EventList:
        return EventList([])

    def table(self, *_args: Any, **_kwargs: Any) -> str:
        return ""

    def total_average(self) -> Any:
        return EventList([]).total_average()

    def toggle_collection_dynamic(self, *_args: Any) -> None:
        """Nothing to toggle: our session records everything."""


@contextmanager
def stand_ins_installed() -> Iterator[None]:
    """Put the stand-in in place of torch.autograd.profiler.profile (reentrant); it gives torch's
    own class unless a session cooperates."""
    if _state["installed"] == 0:
        autograd_profiler.profile = CooperatingProfile
    _state["installed"] += 1
    try:
        yield
    finally:
        _state["installed"] -= 1
        if _state["installed"] == 0:
            autograd_profiler.profile = REAL_AUTOGRAD_PROFILE


_REAL_PREPARE = REAL_AUTOGRAD_PROFILE._prepare_trace


def _refuse_second_session(_self: Any) -> None:
    """Every kineto session starts here (torch.profiler.profile too): refuse while ours runs."""
    raise UsageError("The script started torch.autograd.profiler.profile through a name it bound before "
                     "rooflinectl could stand in for it, and two profiler sessions cannot run at once: "
                     "use torch.profiler.profile, or profile the script without its own profiler.")


@contextmanager
def cooperating() -> Iterator[None]:
    """While the block runs (our session), the stand-ins start no profiler of their own, and
    torch's own class, if the script still holds it, refuses to start a second session."""
    with stand_ins_installed():
        previous, _state["cooperating"] = _state["cooperating"], True
        if not previous:
            _state["noticed"] = False
        REAL_AUTOGRAD_PROFILE._prepare_trace = _refuse_second_session
        try:
            yield
        finally:
            _state["cooperating"] = previous
            if not previous:
                REAL_AUTOGRAD_PROFILE._prepare_trace = _REAL_PREPARE
