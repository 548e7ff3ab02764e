"""A point's label never crosses a roof line (it would hide where the roof is): on the committed
H200 and CPU profiles, every `label:N` annotation's text box, measured by matplotlib, is crossed by
no line drawn as a roof. Before roof lines were obstacles, three of these charts had a label across
1-3 roofs (naive attention's `3,4. bmm` across 3, the MLP's `1-10. mm` across 2)."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import pytest
from matplotlib.text import Annotation, Text
from matplotlib.transforms import Bbox

from rooflinectl.outputs.plot import plot_profile
from rooflinectl.outputs.profile_file import load_profile

matplotlib.use("Agg")
DATA = Path(__file__).parent / "data"


@pytest.mark.parametrize("name", ["h200_mlp", "h200_attention_naive", "h200_attention_sdpa", "report_mlp"])
def test_no_point_label_crosses_a_roof_line(name: str) -> None:
    fig = plot_profile(load_profile(DATA / f"{name}.profile.json"))
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    checked = 0
    for ax in fig.axes:
        roofs = {line.get_gid(): line.get_transform().transform_path(line.get_path()) for line in ax.get_lines()
                 if str(line.get_gid() or "").startswith("roof:")}
        for text in ax.texts:
            if not (isinstance(text, Annotation) and str(text.get_gid() or "").startswith("label:")):
                continue
            text.update_positions(renderer)
            box = Bbox(Text.get_window_extent(text, renderer).get_points())  # the text, not its leader line
            crossed = [gid for gid, path in roofs.items() if path.intersects_bbox(box, filled=False)]
            assert not crossed, f"{text.get_text()!r} crosses {crossed}"
            checked += 1
    assert checked > 0
