"""Small helpers the subcommands share: the console, format names, report output."""

from __future__ import annotations

import os
from typing import Any

import click
from rich.console import Console, RenderableType

from rooflinectl.outputs.plain_text import plain_text

PIPE_WIDTH = 200  # piped output without COLUMNS: wide enough that nothing is dropped
WIDE_WIDTH = 1000  # --wide: lines as long as the columns need


def terminal_width() -> int:
    """The width to fit: COLUMNS when set, else the terminal's, else PIPE_WIDTH for a pipe."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    probe = Console()
    return probe.width if probe.is_terminal else PIPE_WIDTH


class _TrimmedLines:
    """A text stream that drops the spaces rich pads each line with: piped output (a file, `grep`,
    a diff of two runs) gets no trailing spaces. Only for a stream that is not a terminal, where rich
    writes no control codes."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.encoding = getattr(stream, "encoding", "utf-8")
        self._pending = ""

    def write(self, text: str) -> int:
        lines = (self._pending + text).split("\n")
        self._pending = lines.pop()
        if lines:
            self.stream.write("".join(line.rstrip(" ") + "\n" for line in lines))
        return len(text)

    def flush(self) -> None:
        if self._pending:
            self.stream.write(self._pending.rstrip(" "))
            self._pending = ""
        self.stream.flush()

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self.stream.fileno()


def console(width: int | None = None) -> Console:
    """A console as wide as the terminal (or `width`), that does not wrap tables into nothing in pipes
    and leaves no trailing spaces there. A profiled script that closed standard output gets the table
    on standard error, not a crash."""
    import sys

    closed = sys.stdout is None or getattr(sys.stdout, "closed", False)
    stream = sys.stderr if closed else sys.stdout
    is_tty = getattr(stream, "isatty", lambda: False)()
    return Console(width=width or terminal_width(), file=None if is_tty else _TrimmedLines(stream))


def show_or_write(renderable: RenderableType, output: str | None, width: int, **check: Any) -> None:
    """Print to the terminal at `width`, or write it as plain text to -o FILE ('-': standard output
    gets the coloured table); check: write_text_output's inputs and force."""
    from rooflinectl.cli.output_paths import STDOUT, write_text_output

    if output is None or output == STDOUT:
        console(width).print(renderable)
    else:
        write_text_output(plain_text(renderable, width), output, **check)


class FormatChoice(click.Choice):
    """A --format choice with one name per format; old names still accepted (`rich` is `table`)."""

    def __init__(self, choices: tuple[str, ...], aliases: dict[str, str] | None = None) -> None:
        super().__init__(choices)
        self.aliases = aliases or {"rich": "table"}

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        return super().convert(self.aliases.get(value, value), param, ctx)


