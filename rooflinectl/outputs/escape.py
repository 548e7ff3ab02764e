"""Text from a trace or a profile file is data: escape it for the medium it is written to.

A kernel, op, module or device name comes from whoever wrote the profile (or the script that
named its kernels). Unescaped, it could move the terminal's cursor or retitle its window
(escape sequences), inject rich markup (`[link=...]`, or crash on a stray `[/]`), add GitHub
workflow commands on a line of its own (`::add-mask::`, `::error::`), inject Markdown or HTML
into a PR comment, or crash Matplotlib's mathtext parser (`$\\frac{$`). One function per medium;
every renderer passes untrusted strings through the one for its output (charts draw with mathtext
off: outputs/plot.py literal_text).
"""

from __future__ import annotations

import re

from rich.text import Text

from rooflinectl.errors import printable

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|~>$])")
_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_MENTION = re.compile(r"@(?=\w)")


def plain(value: object) -> str:
    """Control characters (escape sequences, newlines, bells, C1 codes), bidi overrides, lone
    surrogates and XML non-characters made visible as \\x1b, \\n, \\u202e, ...: safe for a terminal,
    a log line, XML and one line of a GitHub log (errors.printable, the one escape of messages)."""
    return printable(value)


def csv_cell(value: object) -> object:
    """A CSV cell: text made plain, and text a spreadsheet would run as a formula (starting with
    = + - @) prefixed with ' (OWASP's advice); numbers as they are."""
    if not isinstance(value, str):
        return value
    text = plain(value)
    return "'" + text if text.startswith(_FORMULA_START) else text


def rich_text(value: object, style: str = "") -> Text:
    """A rich Text of untrusted text: no markup is parsed, no control character reaches the terminal."""
    return Text(plain(value), style=style)


def markdown(value: object) -> str:
    """For a Markdown document or table cell: HTML and Markdown syntax shown as text."""
    text = "".join(_HTML.get(c, c) for c in plain(value))
    # a zero-width space after @ keeps `@user` from pinging someone from a PR comment
    return _MENTION.sub("@&#8203;", _MARKDOWN_SPECIAL.sub(r"\\\1", text))


def github_data(value: object) -> str:
    """The message part of a GitHub workflow command (after `::`): %, CR and LF encoded."""
    return plain(str(value).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def github_property(value: object) -> str:
    """A property value of a workflow command (title=...): also ':' and ',' encoded."""
    return github_data(value).replace(":", "%3A").replace(",", "%2C")
