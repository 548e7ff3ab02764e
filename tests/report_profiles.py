"""Profiles for the report's tests: a recorded H200 MLP profile with hostile names in it.

report_mlp.profile.json is the H200 MLP profile as recorded on 2026-11-29 (26 groups, their points
apart on the chart, so each can be hovered in a browser), kept as the report tests' fixture: the
README chart's source, h200_mlp.profile.json, is re-recorded with the current code
(scripts/gpu.d/79-record-mlp.sh) and its groups need not stay apart."""

from __future__ import annotations

from pathlib import Path

from rooflinectl.outputs.profile_file import load_profile
from rooflinectl.profile_model import ProfileData

DATA = Path(__file__).parent / "data"
MLP = DATA / "report_mlp.profile.json"
# Each would do harm if the page parsed it: close the data element, run a script, inject markup
# or an attribute, break a JS string (U+2028), or not encode at all (a lone surrogate).
HOSTILE = (
    '</script><script>window.__pwned = 1</script>',
    '<img src=x onerror="window.__pwned = 2">',
    'kernel "quoted" \'single\' & <b>bold</b> <!-- comment',
    'ünïcødé カーネル \u2028line\u2029para 🚀',
    'lone \ud800 surrogate',
)

HOSTILE_ROWS = (6, 10, 16, 19, 23)


def hostile_profile() -> ProfileData:
    """The report fixture (26 groups, every one on the chart) with HOSTILE as the kernel names of
    HOSTILE_ROWS (points apart on the chart, so each can be hovered) and a hostile module name."""
    data = load_profile(MLP)
    kernels = data.kernels.astype({"kernel": object, "module": object})  # a lone surrogate fits no Arrow string
    for row, name in zip(HOSTILE_ROWS, HOSTILE):
        kernels.at[row, "kernel"] = name
    kernels.at[9, "module"] = '<svg onload="window.__pwned = 3">'
    data.kernels = kernels
    return data
