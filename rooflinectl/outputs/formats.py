"""One registry of output formats: per report kind, each `--format` name, what it is, and the
function that renders it. Every command's `--format` choices and its dispatch come from here, so
a name means the same thing in every command (docs/conventions.md).

Renderers are named as "module:function" and imported when used: `--help` and Tab completion
list the names without importing pandas or rich. Each renderer is called with keyword arguments
only, and given those of the kind's arguments it declares (a text format has no use for a
terminal width): one call per kind, `render(kind, name, **arguments)`.

Kinds and the arguments their commands pass:
- profile (`show`): data, table, top, by, width, include_setup
- unknown (`show --unknown`): data, table, top
- advice (`advise`): report, fail_on, width
- diff (`diff`): report, pct, top
- ceilings (`ceilings`): ceilings, width
- validate (`validate`): summary, rows, families, agreement, top
- kernels (`kernels`): report, entries, ceilings, header, targets, with_verdicts, width

A renderer returns text (written as is) or a rich renderable (the `table` format: printed to the
terminal, or written as plain text to a file).
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from rooflinectl.errors import UsageError

# -o's extension -> the format it implies (docs/conventions.md, "--format")
# (.txt says nothing: any format is text)
SUFFIX_FORMATS = {".json": "json", ".csv": "csv", ".md": "markdown", ".markdown": "markdown", ".xml": "junit"}
REPORT_SUFFIXES = (".html", ".htm")  # the interactive report: `rooflinectl report`
RETIRED = {"rich": "table"}  # an old name -> the one name it became


@dataclass(frozen=True)
class OutputFormat:
    """One --format of one report kind."""

    kind: str
    name: str
    renderer: str  # "module:function", imported when used
    help: str


FORMATS: dict[str, dict[str, OutputFormat]] = {}


def register(kind: str, name: str, renderer: str, help: str) -> None:
    """Add a format to a kind; a second registration of the same name is refused."""
    formats = FORMATS.setdefault(kind, {})
    if name in formats:
        raise ValueError(f"format {name!r} of {kind!r} is registered twice")
    formats[name] = OutputFormat(kind, name, renderer, help)


def names(kind: str) -> tuple[str, ...]:
    """The --format names of a kind, in registration order (`table` first)."""
    return tuple(FORMATS[kind])


def render(kind: str, name: str, **arguments: Any) -> Any:
    """Render with the format's function, given the arguments it declares."""
    module, function = FORMATS[kind][name].renderer.split(":")
    renderer = getattr(importlib.import_module(module), function)
    accepted = inspect.signature(renderer).parameters
    return renderer(**{k: v for k, v in arguments.items() if k in accepted})


def chosen_format(kind: str, fmt: str | None, output: str | None, default: str = "table") -> str:
    """The format to write: --format when given, else the one -o's extension names when this kind
    has it, else `default`. An --format the extension contradicts, or an HTML file (the report's
    extension) for a text format, is one sentence (exit 2)."""
    suffix = PurePath(output).suffix.lower() if output and output != "-" else ""
    implied = SUFFIX_FORMATS.get(suffix)
    if implied is not None and implied not in FORMATS[kind]:
        implied = None  # a format this command does not write: the extension says nothing here
    if fmt is not None and implied is not None and fmt != implied:
        raise UsageError(f"--format {fmt} contradicts -o {output}, whose extension means {implied}: "
                         "drop one of them or change the other.")
    if fmt is None and suffix in REPORT_SUFFIXES:
        raise UsageError(f"-o {output}: an HTML report comes from `rooflinectl report -o {output}`; this command "
                         f"writes {', '.join(names(kind))} (--format).")
    return fmt or implied or default


def _register_all() -> None:
    table = "the terminal table, fitted to its width (plain text in a file)"
    for kind, module, function in (("profile", "table", "render_profile"), ("unknown", "table", "unknown_table")):
        register(kind, "table", f"rooflinectl.outputs.{module}:{function}", table)
        register(kind, "csv", "rooflinectl.outputs.table:profile_csv", "every column, one row per group")
        register(kind, "json", "rooflinectl.outputs.table:profile_json", "the summary and every row")
    advice = "rooflinectl.outputs.advice_render"
    register("advice", "table", f"{advice}:rich_renderable", table)
    register("advice", "markdown", f"{advice}:render_markdown", "for a pull-request comment or step summary")
    register("advice", "json", f"{advice}:render_json", "every finding, machine-readable")
    register("advice", "github", f"{advice}:render_github", "GitHub workflow annotations")
    register("advice", "junit", f"{advice}:render_junit", "a JUnit XML test report")
    diff = "rooflinectl.outputs.diff"
    register("diff", "table", f"{diff}:diff_renderable", table)
    register("diff", "markdown", f"{diff}:render_diff_markdown", "for a pull-request comment or step summary")
    register("diff", "json", f"{diff}:render_diff_json", "every change, machine-readable")
    register("diff", "github", f"{diff}:render_diff_github", "GitHub workflow annotations")
    register("diff", "junit", f"{diff}:render_diff_junit", "a JUnit XML test report")
    register("ceilings", "table", "rooflinectl.outputs.ceilings_table:render_ceilings", table)
    register("ceilings", "json", "rooflinectl.outputs.ceilings_table:ceilings_json", "every roof and its source")
    validate = "rooflinectl.outputs.validate_render"
    register("validate", "table", f"{validate}:render_validate", table)
    register("validate", "markdown", f"{validate}:validate_markdown", "for a pull-request comment or step summary")
    register("validate", "csv", f"{validate}:validate_csv", "every column, one row per group")
    register("validate", "json", f"{validate}:validate_json", "the agreement, families and rows")
    register("kernels", "table", "rooflinectl.outputs.kernels_report:render_suite", table)
    register("kernels", "json", "rooflinectl.outputs.kernels_report:suite_json", "every variant and the roofs")


_register_all()
