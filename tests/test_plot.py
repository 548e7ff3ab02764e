"""The single-profile roofline chart, checked through its artists (never pixels), on CPU."""

from __future__ import annotations

import glob
import itertools
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from matplotlib.colors import to_hex
from matplotlib.figure import Figure
from matplotlib.transforms import Bbox
from test_plot_helpers import GPU_ROWS, H200_BF16, H200_BW, make_profile

from rooflinectl.ceilings.model import Ceilings, Roof
from rooflinectl.errors import UsageError
from rooflinectl.outputs.plot import WARN_COLOR, plot_profile, save_figure
from rooflinectl.outputs.plot_layout import text_boxes
from rooflinectl.outputs.profile_file import load_profile

DATA_PROFILES = sorted(glob.glob(str(Path(__file__).parent / "data" / "*.profile.json")))


def _by_gid(artists, prefix: str) -> dict:
    return {a.get_gid(): a for a in artists if (a.get_gid() or "").startswith(prefix)}


def _main_ax(fig: Figure):
    return fig.axes[0]


def _points(ax) -> np.ndarray:
    offsets = [c.get_offsets() for c in ax.collections if (c.get_gid() or "").startswith("points:")]
    return np.concatenate(offsets) if offsets else np.empty((0, 2))


def _all_texts(fig: Figure) -> list[str]:
    return [t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text"))]


@pytest.fixture(scope="module")
def fig() -> Figure:
    return plot_profile(make_profile(), top=10)


def test_roofs_drawn_at_their_values(fig: Figure) -> None:
    lines = _by_gid(_main_ax(fig).lines, "roof:")
    assert {"roof:dram", "roof:l2", "roof:tensor.bf16", "roof:tensor.tf32", "roof:simt.fp32"} == set(lines)
    x, y = lines["roof:dram"].get_data()
    assert np.allclose(np.asarray(y) / np.asarray(x), H200_BW)
    assert np.allclose(lines["roof:tensor.bf16"].get_ydata(), H200_BF16)
    # the bf16 roof starts at its ridge point on the DRAM roof
    assert math.isclose(lines["roof:tensor.bf16"].get_xdata()[0], H200_BF16 / H200_BW)
    assert "roof:simt.fp64" not in lines  # no fp64 work in the profile: no fp64 roof


def test_the_measured_achievable_peak_is_a_dashed_line_under_its_roof() -> None:
    """Issue 29: the roof is the peak, the measured achievable figure a second, dashed line (drawn
    where it sits 10% or more under the roof: closer, it would lie on it)."""
    data = make_profile()
    data.ceilings.achievable_flops_per_s.update({"tensor.bf16": Roof(0.74 * H200_BF16, "measured", "mm", 1980.0),
                                                 "simt.fp32": Roof(0.96 * 67e12, "measured", "fma")})
    lines = _by_gid(_main_ax(plot_profile(data, top=10)).lines, "roof:")
    dashed = lines["roof:tensor.bf16:achievable"]
    assert np.allclose(dashed.get_ydata(), 0.74 * H200_BF16) and dashed.get_linestyle() == "--"
    assert "roof:simt.fp32:achievable" not in lines
    assert np.allclose(lines["roof:tensor.bf16"].get_ydata(), H200_BF16)


def test_roof_labels_say_value_and_source(fig: Figure) -> None:
    texts = _all_texts(fig)
    for expected in ("DRAM 4.8 TB/s (spec)", "L2 11 TB/s (measured)", "bf16 tensor 989 TFLOP/s (spec)",
                     "tf32 tensor 494 TFLOP/s (spec)"):
        assert expected in texts, texts
    assert any(t.startswith("ridge 206") for t in texts)


def test_every_costed_point_inside_the_axes(fig: Figure) -> None:
    ax = _main_ax(fig)
    pts = _points(ax)
    kernels = make_profile().kernels
    assert len(pts) == (kernels["cost_source"] != "none").sum()  # nothing costed is dropped
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    assert ((pts[:, 0] > x0) & (pts[:, 0] < x1) & (pts[:, 1] > y0) & (pts[:, 1] < y1)).all()


def test_zero_flop_kernels_sit_in_the_left_strip(fig: Figure) -> None:
    pts = _points(_main_ax(fig))
    strip_x = pts[:, 0].min()
    in_strip = pts[np.isclose(pts[:, 0], strip_x)]
    assert len(in_strip) == 2  # the copy and the embedding gather
    kernels = make_profile().kernels
    assert strip_x < kernels.loc[kernels["flops"] > 0, "intensity"].min()
    assert "no FLOPs\n(placed by\nbytes/s)" in _all_texts(fig)


def test_point_area_follows_time_share(fig: Figure) -> None:
    sizes = np.concatenate([c.get_sizes() for c in _main_ax(fig).collections if (c.get_gid() or "").startswith("points:")])
    kernels = make_profile().kernels
    top = kernels["time_share"].iloc[0]
    assert math.isclose(sizes.max(), 2600 * top, rel_tol=1e-6)


def test_top_groups_labelled_with_short_names(fig: Figure) -> None:
    labels = _by_gid(_main_ax(fig).texts, "label:")
    # ranks 4 and 9 have no cost (not drawn); at most MAX_LABELS labels, the largest groups first
    # (issue 35: labels never pile up); rank 15, above its roof, is in the note, not labelled
    assert set(labels) == {f"label:{i}" for i in (1, 2, 3, 5, 6, 7)}
    assert labels["label:1"].get_text() == "1. mm · fc1"
    assert all(len(t.get_text()) <= 30 for t in labels.values())
    assert not any("⚠" in t.get_text() for t in labels.values())


@pytest.mark.parametrize("top", [10, 15])
def test_labels_do_not_overlap(top: int) -> None:
    fig = plot_profile(make_profile(), top=top)
    renderer = fig.canvas.get_renderer()
    ax = _main_ax(fig)
    texts = [t for t in ax.texts if (t.get_gid() or "").startswith(("label:", "roof_label:", "ridge_label:"))]
    boxes = [[Bbox.from_extents(*b) for b in text_boxes(t, renderer)] for t in texts]
    for (ta, a), (tb, b) in itertools.combinations(zip(texts, boxes, strict=True), 2):
        assert not any(p.overlaps(q) for p in a for q in b), (ta.get_text(), tb.get_text())
    frame = ax.get_window_extent(renderer)
    for t in texts:
        b = Bbox.union([Bbox.from_extents(*e) for e in text_boxes(t, renderer)])
        assert frame.x0 - 1 <= b.x0 and b.x1 <= frame.x1 + 1, t.get_text()


def test_unknown_cost_listed_with_time_share(fig: Figure) -> None:
    note = _by_gid(fig.texts, "note:")["note:unknown"].get_text()
    assert "10.8% of time" in note
    assert "rope · attn.rope 8.1%" in note and "nccl:all_reduce 2.7%" in note


def test_point_above_roof_drawn_as_warning(fig: Figure) -> None:
    edges = np.concatenate([c.get_edgecolors() for c in _main_ax(fig).collections if (c.get_gid() or "").startswith("points:")])
    assert sum(to_hex(e) == WARN_COLOR for e in edges) == 1
    note = _by_gid(fig.texts, "note:")["note:above_roof"]
    assert "check the counts" in note.get_text() and "add · mlp" in note.get_text()


def test_legend_table_maps_ranks_to_full_names(fig: Figure) -> None:
    table = _by_gid(fig.axes[1].texts, "table:")
    assert "27.9%" in table["table:row:1"].get_text() and "aten::mm · model.mlp.fc1" in table["table:row:1"].get_text()
    assert table["table:kernel:1"].get_text().startswith("cutlass_80_wmma_tensorop_bf16")
    assert "no cost" in table["table:row:4"].get_text()
    assert "+ 5 more groups" in table["table:rest"].get_text()


def test_filter_and_color_by_family() -> None:
    fig = plot_profile(make_profile(), filter_regex="attn", color_by="family")
    ax = _main_ax(fig)
    assert len(_points(ax)) == 2  # softmax and bmm in model.attn; rope has no cost
    assert "--filter 'attn': 3 of 15 groups" in _by_gid(fig.texts, "note:")["note:filter"].get_text()
    colors = {to_hex(c) for coll in ax.collections if (coll.get_gid() or "").startswith("points:") for c in coll.get_facecolors()}
    assert len(colors) == 2  # gemm and softmax families


def test_bad_options_raise_usage_error() -> None:
    with pytest.raises(UsageError, match="regular expression"):
        plot_profile(make_profile(), filter_regex="(")
    with pytest.raises(UsageError, match="color-by"):
        plot_profile(make_profile(), color_by="rainbow")


def test_cpu_profile_and_empty_profile() -> None:
    cpu = Ceilings("cpu", "cpu", {"dram": Roof(20e9, "measured")}, {"simt.fp32": Roof(100e9, "estimate")})
    rows = [r[:4] + ("fp32", "simt") + r[6:] for r in GPU_ROWS]
    fig = plot_profile(make_profile(rows, cpu))
    assert "fp32 simt 100 GFLOP/s (estimate)" in _all_texts(fig)
    assert "DRAM 20 GB/s (measured)" in _all_texts(fig)
    empty = make_profile(rows[:0], cpu)
    assert len(_points(_main_ax(plot_profile(empty)))) == 0


@pytest.mark.parametrize("suffix", [".png", ".svg", ".pdf"])
def test_save_by_extension_atomically(tmp_path: Path, fig: Figure, suffix: str) -> None:
    out = save_figure(fig, tmp_path / f"chart{suffix}")
    head = out.read_bytes()[:5]
    assert {".png": b"\x89PNG\r", ".svg": b"<?xml", ".pdf": b"%PDF-"}[suffix] == head
    assert [p.name for p in tmp_path.iterdir()] == [f"chart{suffix}"]  # no temp file left


def test_unsupported_extension(tmp_path: Path, fig: Figure) -> None:
    with pytest.raises(UsageError, match=r"\.png, \.svg or \.pdf"):
        save_figure(fig, tmp_path / "chart.jpg")
    assert not list(tmp_path.iterdir())


def test_no_pyplot_no_global_state() -> None:
    code = ("import sys; sys.path.insert(0, 'tests'); from test_plot_helpers import make_profile; "
            "from rooflinectl.outputs.plot import plot_profile; plot_profile(make_profile()); "
            "assert 'matplotlib.pyplot' not in sys.modules, 'pyplot imported'")
    root = Path(__file__).parent.parent
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, env={"PYTHONPATH": str(root), "MPLBACKEND": ""})
    assert done.returncode == 0, done.stderr


@pytest.mark.skipif(not DATA_PROFILES, reason="no recorded profiles under tests/data/ yet")
@pytest.mark.parametrize("path", DATA_PROFILES)
def test_recorded_profiles(path: str) -> None:
    data = load_profile(path)
    fig = plot_profile(data)
    ax = _main_ax(fig)
    kernels = data.kernels
    costed = kernels[(kernels["cost_source"] != "none") & kernels["flops"].notna() & kernels["bytes"].notna()
                     & ((kernels["flops"] > 0) | (kernels["bytes"] > 0)) & (kernels["time_s"] > 0)]
    assert len(_points(ax)) == len(costed)
    assert "roof:dram" in _by_gid(ax.lines, "roof:")
    if (kernels["cost_source"] == "none").any():
        assert "note:unknown" in _by_gid(fig.texts, "note:")
