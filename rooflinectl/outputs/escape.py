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

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")  # and lone surrogates: no encoding can write them
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|~>$])")
_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def _visible(match: re.Match[str]) -> str:
    char = match.group(0)
    if ord(char) > 0xFF:  # a lone surrogate (a JSON file may hold "\ud800"): shown, never written raw
        return f"\\u{ord(char):04x}"
    return {"\n": "\\n", "\t": "\\t", "\r": "\\r"}.get(char, f"\\x{ord(char):02x}")


def plain(value: object) -> str:
    """Control characters (escape sequences, newlines, bells, C1 codes) made visible as \\x1b,
    \\n, ...: safe for a terminal, a log line, XML and one line of a GitHub log; a lone
    surrogate as \\ud800 (UTF-8 cannot encode it: printing or drawing it would fail)."""
    return _CONTROL.sub(_visible, str(value))


def rich_text(value: object, style: str = "") -> Text:
    """A rich Text of untrusted text: no markup is parsed, no control character reaches the terminal."""
    return Text(plain(value), style=style)


def markdown(value: object) -> str:
    """For a Markdown document or table cell: HTML and Markdown syntax shown as text."""
    text = "".join(_HTML.get(c, c) for c in plain(value))
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def github_data(value: object) -> str:
    """The message part of a GitHub workflow command (after `::`): %, CR and LF encoded."""
    return plain(str(value).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def github_property(value: object) -> str:
    """A property value of a workflow command (title=...): also ':' and ',' encoded."""
    return github_data(value).replace(":", "%3A").replace(",", "%2C")
