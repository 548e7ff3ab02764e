"""A finding's source line as text (analysis/advice/location.py chose the line): for the table,
markdown, GitHub annotations and the HTML report."""

from __future__ import annotations

from rooflinectl.analysis.advice.registry import Finding


def split_location(source: str) -> tuple[str, int | None]:
    """'path/to/file.py:42' -> ('path/to/file.py', 42); a text without a line number -> (text, None)."""
    path, _, line = source.rpartition(":")
    return (path, int(line)) if path and line.isdigit() else (source, None)


def location_text(f: Finding) -> str:
    """'train.py:42 in step (via transformers LlamaAttention.forward / torch.matmul)', '' without a line."""
    if not f.source:
        return ""
    function = f" in {f.source_function}" if f.source_function else ""
    call = f" ({'via ' if ' / ' in f.source_call else ''}{f.source_call})" if f.source_call else ""
    return f"{f.source}{function}{call}"
