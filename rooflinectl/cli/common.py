"""Small helpers the subcommands share: the console, format names, report output."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
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
    from rooflinectl.outputs.output_paths import STDOUT, write_text_output

    if output is None or output == STDOUT:
        console(width).print(renderable)
    else:
        write_text_output(plain_text(renderable, width), output, **check)


class FormatChoice(click.Choice):
    """--format: the names the output-format registry holds for a report kind (outputs/formats.py);
    a retired name (`rich`) is refused with the name it became."""

    def __init__(self, kind: str) -> None:
        from rooflinectl.outputs.formats import names

        super().__init__(names(kind))
        self.kind = kind

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from rooflinectl.outputs.formats import RETIRED

        if value in RETIRED:
            self.fail(f"{value!r} is now called {RETIRED[value]!r}: use --format {RETIRED[value]}.", param, ctx)
        return super().convert(value, param, ctx)


def format_option(kind: str, from_output: bool = True) -> Callable[[Any], Any]:
    """The --format option of a command that renders a report of this kind: choices from the
    registry; no default, so that -o's extension can choose (formats.chosen_format).
    from_output=False: -o is not the report (kernels: its profile), the default is table."""
    from rooflinectl.outputs.formats import FORMATS

    listed = "; ".join(f"{f.name}: {f.help}" for f in FORMATS[kind].values())
    default = "from -o's extension, else table" if from_output else "table"
    return click.option("--format", "fmt", type=FormatChoice(kind), default=None, help=f"{listed} [default: {default}]")


def emit(rendered: RenderableType | str, output: str | None, width: int, **check: Any) -> None:
    """Write what a format rendered: text as it is (ending in a newline), a rich renderable to the
    terminal or, as plain text, to -o FILE; check: write_text_output's inputs and force."""
    from rooflinectl.outputs.output_paths import write_text_output

    if isinstance(rendered, str):
        write_text_output(rendered if rendered.endswith("\n") else rendered + "\n", output, **check)
    else:
        show_or_write(rendered, output, width, **check)


def top_options(default: int, what: str = "rows in the table") -> Callable[[Any], Any]:
    """--top N and --all, the same on every command that leaves rows out: --all is --top 0 (every
    row). The command receives `top` only."""
    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(command)
        def with_all(*args: Any, show_all: bool = False, **kwargs: Any) -> Any:
            if show_all:
                kwargs["top"] = 0
            return command(*args, **kwargs)

        with_all = click.option("--all", "show_all", is_flag=True, help=f"{what}: every one (--top 0)")(with_all)
        return click.option("--top", type=click.IntRange(min=0), default=default, show_default=True,
                            help=f"{what} (0: every one, as --all)")(with_all)
    return decorate
