"""What a long capture or analysis is doing now, for a status line.

Stages never print: they report a phase ("exporting the trace (315 MB)") here, and whoever
listens (the CLI's status line) shows it. With no listener a report costs a list lookup.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

_listeners: list[Callable[[str], None]] = []


def report(phase: str) -> None:
    """Tell the listeners what is being done now."""
    for listener in list(_listeners):
        listener(phase)


@contextmanager
def listening(callback: Callable[[str], None]) -> Iterator[None]:
    """Call callback(phase) for every report made inside the block."""
    _listeners.append(callback)
    try:
        yield
    finally:
        _listeners.remove(callback)
