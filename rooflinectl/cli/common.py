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


def console(width: int | None = None) -> Console:
    """A console as wide as the terminal (or `width`), that does not wrap tables into nothing in pipes.
    A profiled script that closed standard output gets the table on standard error, not a crash."""
    import sys

    closed = sys.stdout is None or getattr(sys.stdout, "closed", False)
    return Console(width=width or terminal_width(), file=sys.stderr if closed else None)


def show_or_write(renderable: RenderableType, output: str | None, width: int, **check: Any) -> None:
    """Print to the terminal at `width`, or write it as plain text to -o FILE ('-': standard output
    gets the coloured table); check: write_text_output's inputs and force."""
    from rooflinectl.outputs.output_paths import STDOUT, write_text_output

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


