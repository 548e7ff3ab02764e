"""The session's roofline rows rendered: the terminal summary table, and --roofline-report as
JSON or markdown (a CI step summary). Rendering only: the figures come from records.py; strings
from test ids and kernel names are escaped for markdown. Light: standard library only."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from rooflinectl.atomic import atomic_file
from rooflinectl.schema import PYTEST_REPORT_FORMAT

REPORT_FORMAT = PYTEST_REPORT_FORMAT
COLUMNS = ("test", "kernel", "efficiency", "bound", "time", "un-profiled", "note")
KERNEL_WIDTH = 40


def _duration(seconds: Any) -> str:
    if not isinstance(seconds, (int, float)) or not math.isfinite(seconds):
        return "-"
    return f"{seconds * 1e3:.3g} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.3g} us"


def _percent(value: Any) -> str:
    return f"{value:.1%}" if isinstance(value, (int, float)) and math.isfinite(value) else "-"


def cells(row: dict[str, Any]) -> list[str]:
    """A row's cells in COLUMNS order (a test's second roofline call is 'test #2')."""
    test = row["test"] + (f" #{row['call']}" if row.get("call", 1) > 1 else "")
    note = f"vs baseline: {row['change']}" if row.get("change") else ""
    if row.get("regressions"):
        note += " REGRESSED"
    if row.get("above_roof"):
        note += f" above its roof: {row['above_roof']} (numbers wrong)"
    if row.get("outcome") == "skipped":
        note = f"skipped: {row.get('reason', '')}"
    return [test, str(row.get("kernel") or row.get("label") or "-"), _percent(row.get("efficiency")),
            str(row.get("bound") or "-"), _duration(row.get("time_s")), _duration(row.get("unprofiled_time_s")),
            note.strip() or "-"]


def terminal_lines(rows: list[dict[str, Any]], kernel_width: int = KERNEL_WIDTH) -> list[str]:
    """Plain aligned columns. Test ids are never cut (they are what -k and --lf take); a long
    kernel name (a cuBLAS template) keeps its first kernel_width characters."""
    def cut(text: str) -> str:
        return text if len(text) <= kernel_width else text[: kernel_width - 3] + "..."

    table = [list(COLUMNS)] + [[c, cut(k), *rest] for c, k, *rest in (cells(r) for r in rows)]
    widths = [max(len(line[i]) for line in table) for i in range(len(COLUMNS))]
    out = []
    for line in table:
        parts = [c.ljust(w) if i in (0, 1, 3) else c.rjust(w) if i < len(COLUMNS) - 1 else c
                 for i, (c, w) in enumerate(zip(line, widths))]
        out.append("  ".join(parts).rstrip())
    return out


def escape_markdown(text: str) -> str:
    """A string from a test id or kernel name, safe in a markdown table cell (GitHub renders HTML too)."""
    for a, b in (("\\", "\\\\"), ("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ("|", "\\|"), ("`", "\\`"),
                 ("*", "\\*"), ("_", "\\_"), ("\r", " "), ("\n", " ")):
        text = text.replace(a, b)
    return text


def markdown(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = ["## Roofline tests", "",
             escape_markdown(f"rooflinectl {meta.get('tool_version', '')}, {len(rows)} roofline measurements; "
                             f"roofs: {meta.get('ceilings_mode', '')}"), "",
             "| " + " | ".join(("outcome", *COLUMNS)) + " |", "|" + " --- |" * (len(COLUMNS) + 1)]
    for row in rows:
        lines.append("| " + " | ".join(escape_markdown(c) for c in [row.get("outcome", ""), *cells(row)]) + " |")
    return "\n".join(lines) + "\n"


def write_report(path: Path, rows: list[dict[str, Any]], meta: dict[str, Any]) -> None:
    """JSON, or markdown when the name ends in .md; written atomically (no half file)."""
    with atomic_file(path) as fh:
        if path.suffix.lower() == ".md":
            fh.write(markdown(rows, meta))
        else:
            json.dump({"format": REPORT_FORMAT, "version": 1, **meta, "rows": rows}, fh, indent=1, default=str)
            fh.write("\n")
