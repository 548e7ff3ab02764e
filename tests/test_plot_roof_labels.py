"""Roof labels never sit on another roof or another label (issue 35), checked with matplotlib's
own renderer and geometry on the CPU: each label's window extent against the others', and the
label's drawn box (its bbox patch: the rotated rectangle of a slanted label) against every other
roof's line. The H200's DRAM (4.7 TB/s) and L2 (8.5 TB/s) roofs lie closer than a line of text
is tall, which put the DRAM label across the L2 line before."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from matplotlib.figure import Figure
from test_plot_helpers import GPU_ROWS, make_profile

from rooflinectl.ceilings.model import Ceilings, Roof
from rooflinectl.outputs.plot import plot_profile
from rooflinectl.outputs.plot_compare import plot_comparison
from rooflinectl.outputs.profile_file import load_profile

DATA = Path(__file__).parent / "data"


def _cpu_profile():
    """A CPU's roofs as `ceilings --measure` records them: a cache roof within 2x of DRAM."""
    cpu = Ceilings("cpu", "cpu", {"dram": Roof(21e9, "measured"), "cache": Roof(36e9, "measured")},
                   {"simt.fp32": Roof(180e9, "measured"), "simt.bf16": Roof(90e9, "measured")})
    return make_profile([r[:4] + ("fp32", "simt") + r[6:] for r in GPU_ROWS], cpu)


def _crowded_profile():
    """Three memory roofs within 1.3x of each other: the middle one's label fits on neither side."""
    ceilings = make_profile().ceilings
    ceilings.memory_bytes_per_s.update({"dram": Roof(4.7e12, "measured"), "l2": Roof(5.9e12, "measured"),
                                        "l1": Roof(7.4e12, "measured")})
    return make_profile(ceilings=ceilings)


CASES = {
    "h200_mlp": lambda: load_profile(DATA / "h200_mlp.profile.json"),  # DRAM, L2, L1 and an achievable bf16 line
    "h200_attention": lambda: load_profile(DATA / "h200_attention_naive.profile.json"),
    "h200_spec": make_profile,
    "cpu": _cpu_profile,
    "crowded": _crowded_profile,
}


def _labels(fig: Figure) -> list:
    ax = fig.axes[0]
    return [t for t in ax.texts if (t.get_gid() or "").startswith(("roof_label:", "ridge_label:"))]


def _drawn_box(text, renderer):
    """The text's rectangle as matplotlib draws it (a bbox patch with no padding), in pixels."""
    text.set_bbox({"boxstyle": "square,pad=0", "alpha": 0.0})
    text.update_bbox_position_size(renderer)
    patch = text.get_bbox_patch()
    return patch.get_transform().transform_path(patch.get_path())


@pytest.fixture(scope="module", params=sorted(CASES))
def chart(request) -> tuple[str, Figure]:
    fig = plot_profile(CASES[request.param]())
    fig.canvas.draw()  # the renderer's positions, as the saved file has them
    return request.param, fig


def test_every_roof_is_labelled_once(chart) -> None:
    _, fig = chart
    ax = fig.axes[0]
    roofs = {line.get_gid().removeprefix("roof:") for line in ax.lines if (line.get_gid() or "").startswith("roof:")}
    labelled = [t.get_gid().removeprefix("roof_label:") for t in ax.texts if (t.get_gid() or "").startswith("roof_label:")]
    assert sorted(labelled) == sorted(roofs)


def test_roof_labels_do_not_overlap_each_other(chart) -> None:
    name, fig = chart
    renderer = fig.canvas.get_renderer()
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in _labels(fig)]
    assert len(boxes) >= 3
    for (a, box_a), (b, box_b) in itertools.combinations(boxes, 2):
        assert not box_a.overlaps(box_b), (name, a, b)
    frame = fig.axes[0].get_window_extent(renderer)
    for text, box in boxes:
        assert frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1, (name, text)


def test_roof_labels_do_not_cross_another_roof(chart) -> None:
    name, fig = chart
    ax, renderer = fig.axes[0], fig.canvas.get_renderer()
    roofs = {line.get_gid().removeprefix("roof:"): line.get_transform().transform_path(line.get_path())
             for line in ax.lines if (line.get_gid() or "").startswith("roof:")}
    for text in _labels(fig):
        own = text.get_gid().removeprefix("roof_label:")
        box = _drawn_box(text, renderer)
        crossed = [key for key, path in roofs.items() if key != own and path.intersects_path(box, filled=True)]
        assert not crossed, (name, text.get_text(), crossed)


def test_the_test_data_holds_the_close_roofs() -> None:
    """The H200 case is what it claims: DRAM and L2 within 2x, so the old placement failed on it."""
    roofs = load_profile(DATA / "h200_mlp.profile.json").ceilings.memory_bytes_per_s
    assert 1.0 < roofs["l2"].value / roofs["dram"].value < 2.0
    cpu = _cpu_profile().ceilings.memory_bytes_per_s
    assert 1.0 < cpu["cache"].value / cpu["dram"].value < 2.0


def test_a_label_with_no_clean_spot_goes_into_the_key() -> None:
    fig = plot_profile(_crowded_profile())
    ax = fig.axes[0]
    samples = {line.get_gid().removeprefix("roof_key_sample:"): line for line in ax.lines
               if (line.get_gid() or "").startswith("roof_key_sample:")}
    assert samples, "three roofs within 1.3x: one label at least goes into the key"
    roofs = {line.get_gid().removeprefix("roof:"): line for line in ax.lines if (line.get_gid() or "").startswith("roof:")}
    for key, sample in samples.items():  # the sample is drawn as its roof is
        assert sample.get_linestyle() == roofs[key].get_linestyle()
        assert sample.get_linewidth() == roofs[key].get_linewidth()


def test_the_comparison_chart_keeps_its_roof_labels_apart() -> None:
    """The BEFORE -> AFTER chart draws its roofs with the same code: the two H200 profiles."""
    from rooflinectl.analysis.charts import compare_for_chart

    naive = load_profile(DATA / "h200_attention_naive.profile.json")
    sdpa = load_profile(DATA / "h200_attention_sdpa.profile.json")
    fig = plot_comparison(naive, sdpa, compare_for_chart(naive, sdpa))
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in _labels(fig)]
    assert len(boxes) >= 3
    assert not any(a.overlaps(b) for a, b in itertools.combinations(boxes, 2))
