"""What a long capture or analysis is doing now, for a status line.

Stages never print: they report a phase ("exporting the trace (315 MB)") here, and whoever
listens (the CLI's status line) shows it. With no listener a report costs a list lookup.
A mark is a finer step that only timing listeners see (the phase log, not the status line):
the session's set-up before the user's program runs, which the status line leaves alone.
A notice is a one-line message for the user at run time (taking over the script's own profiler).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

_listeners: list[Callable[[str], None]] = []
_mark_listeners: list[Callable[[str], None]] = []
_notice_listeners: list[Callable[[str], None]] = []


def report(phase: str) -> None:
    """Tell the listeners what is being done now."""
    for listener in list(_listeners):
        listener(phase)


def mark(step: str) -> None:
    """Tell the timing listeners that a step begins (not shown on the status line)."""
    for listener in list(_mark_listeners):
        listener(step)


def notice(text: str) -> None:
    """Tell the user something about the run now, in one line (the CLI prints it on stderr): what
    rooflinectl did to the program that the program would not expect."""
    for listener in list(_notice_listeners):
        listener(text)


@contextmanager
def noticing(callback: Callable[[str], None]) -> Iterator[None]:
    """Call callback(text) for every notice made inside the block."""
    _notice_listeners.append(callback)
    try:
        yield
    finally:
        _notice_listeners.remove(callback)


@contextmanager
def listening(callback: Callable[[str], None], marks: bool = False) -> Iterator[None]:
    """Call callback(phase) for every report made inside the block (and every mark, if marks)."""
    _listeners.append(callback)
    if marks:
        _mark_listeners.append(callback)
    try:
        yield
    finally:
        _listeners.remove(callback)
        if marks:
            _mark_listeners.remove(callback)
