"""`rooflinectl report`: one self-contained HTML file (data, scripts, styles inline; no network).

The chart library (plotly.js basic, MIT; report_assets/THIRD_PARTY.md) and our own script and
styles are package data, read here and inlined. The data goes in as JSON inside
`<script type="application/json">`, with `<`, `>`, `&` and U+2028/U+2029 escaped and every other
non-ASCII character (lone surrogates too) as a \\u escape: no string from a profile can close
the script element or start markup. report.js puts strings into the page with textContent only.
"""

from __future__ import annotations

import base64
import html
import io
import json
import os
from importlib import resources
from pathlib import Path
from typing import Any

from rooflinectl.atomic import atomic_file
from rooflinectl.errors import UsageError

ASSETS = "report_assets"
CHART_LIBRARY = "plotly-basic.min.js"
# In the first bytes of every report: `report -o` replaces a file holding it, and no other without --force
GENERATOR_MARKER = '<meta name="generator" content="rooflinectl report">'
_JSON_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def asset_text(name: str) -> str:
    """One file of the package's report assets (the chart library, report.js, report.css)."""
    return resources.files("rooflinectl.outputs").joinpath(ASSETS, name).read_text(encoding="utf-8")


def script_safe_json(document: Any) -> str:
    """JSON that can sit inside a <script> element: nothing in it can end the element or the page.

    ensure_ascii writes every non-ASCII character (U+2028/9 and lone surrogates included) as a
    \\u escape; `<`, `>` and `&` are escaped too. JSON.parse reads the escapes back as the text."""
    text = json.dumps(document, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    return "".join(_JSON_ESCAPES.get(c, c) for c in text) if any(c in text for c in "<>&") else text


def _inline_script(source: str, name: str) -> str:
    """A script's source checked to be safe inline: it must not contain `</script` or `<!--`."""
    lowered = source.lower()
    if "</script" in lowered or "<!--" in lowered:
        raise UsageError(f"The report asset {name} cannot be inlined (it holds '</script' or '<!--').")
    return source


def render_report(document: dict[str, Any]) -> str:
    """The whole page as a string."""
    title = html.escape(str(document.get("title") or "rooflinectl report"))
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        GENERATOR_MARKER,
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        # nothing leaves the page: no request of any kind, scripts only the inline ones
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
        "script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data: blob:; font-src data:\">",
        f"<title>{title}</title>",
        f"<style>{asset_text('report.css')}</style>",
        "</head><body>",
        '<div id="app"><noscript>This report needs JavaScript to draw its charts and tables.</noscript></div>',
        f'<script type="application/json" id="report-data">{script_safe_json(document)}</script>',
        f"<script>{_inline_script(asset_text(CHART_LIBRARY), CHART_LIBRARY)}</script>",
        f"<script>{_inline_script(asset_text('report.js'), 'report.js')}</script>",
        "</body></html>",
        "",
    ])


def write_report(document: dict[str, Any], path: str | os.PathLike[str]) -> Path:
    """Write the page through a temp file and a rename: never half a report."""
    target = Path(path)
    with atomic_file(target) as handle:
        handle.write(render_report(document))
    return target


def notebook_html(summary_lines: list[str], table_html: str, figure: Any | None) -> str:
    """What Jupyter shows for a Profile: the summary, the top rows and the chart as a PNG.

    No script: a notebook shows it whether or not it is trusted. summary_lines are escaped
    here; table_html must come escaped (pandas to_html escapes by default)."""
    chart = ""
    if figure is not None:
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=72, facecolor="white")
        chart = (f'<img alt="roofline" style="max-width:100%" '
                 f'src="data:image/png;base64,{base64.b64encode(buffer.getvalue()).decode("ascii")}">')
    summary = "<br>".join(html.escape(line) for line in summary_lines)
    return (f'<div class="rooflinectl-profile"><div style="font-family:monospace;font-size:12px;white-space:pre-wrap">'
            f"{summary}</div>{chart}{table_html}</div>")
