"""Where in the user's code a finding is: the source line of its rows (attribution/sources.py).

A finding names the source line of its row with the most time that has one, with that row's
function and library call. A merged finding (analysis/advice/merge.py) keeps its first
instance's line; its count says how many it stands for.
"""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from rooflinectl.analysis.advice.common import cell_float, cell_text
from rooflinectl.analysis.advice.registry import Finding


def located(f: Finding, kernels: pd.DataFrame) -> Finding:
    """The finding with source, source_function and source_call from its rows (unchanged when
    none of its rows has a line, or it already names one)."""
    if f.source or "source" not in kernels.columns:
        return f
    best, best_s = None, -1.0
    for r in f.rows:
        if 0 <= r < len(kernels):
            row = kernels.iloc[r]
            if cell_text(row, "source") and cell_float(row, "time_s", 0.0) > best_s:
                best, best_s = row, cell_float(row, "time_s", 0.0)
    if best is None:
        return f
    return replace(f, source=cell_text(best, "source"), source_function=cell_text(best, "source_function"),
                   source_call=cell_text(best, "source_call"))
