"""A rich renderable as plain text (no colour, no control codes): what a report file, a test or a
non-table format gets where the terminal would get the coloured table; no line ends in the spaces
rich pads it with."""

from __future__ import annotations

import io

from rich.console import Console, RenderableType


def plain_text(renderable: RenderableType, width: int) -> str:
    buffer = io.StringIO()
    Console(file=buffer, width=width, color_system=None, force_terminal=False).print(renderable)
    return "".join(line.rstrip(" ") + "\n" for line in buffer.getvalue().splitlines())
