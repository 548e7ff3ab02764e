"""Issue 35's plot legibility, checked through the artists: at most a handful of labels chosen by
time share, one label per pile of coincident points, warnings summarised in one note, footer
notes inside the figure, zero-FLOP groups drawn (not dropped)."""

from __future__ import annotations

import math

import numpy as np
from test_plot_helpers import CUTLASS, make_profile

from rooflinectl.outputs.plot import MAX_LABELS, TABLE_ROWS, plot_profile, rank_ranges
from rooflinectl.outputs.plot_layout import fitted_list


def _texts(fig, prefix: str) -> dict:
    artists = [*fig.texts, *(t for ax in fig.axes for t in ax.texts)]
    return {t.get_gid(): t for t in artists if (t.get_gid() or "").startswith(prefix)}


def _crowded_rows() -> list[tuple]:
    """Twelve layers' identical GEMMs (one spot), 20 memory-bound groups of which 8 above their
    roof, 15 groups of unknown cost with long names, and zero-FLOP copies."""
    rows: list[tuple] = []
    for layer in range(12):
        rows.append((CUTLASS, "aten::mm", "gemm", f"model.layers.{layer}.mlp.fc1", "bf16", "tensor", 10,
                     3.0e-3 - layer * 1e-6, (3.0e-3 - layer * 1e-6) * 4e14, 6.0e8, "analytic"))
    for i in range(20):
        time_s = 4.0e-4 - i * 1e-5
        bytes_per_s = 9e12 if i % 5 == 0 else 2e12 + i * 1e11  # every 5th above the DRAM roof (4.8 TB/s)
        rows.append((f"elementwise_kernel_{i}", f"aten::op_{i}", "elementwise", f"model.block.ew{i}", "bf16", "simt",
                     10, time_s, time_s * bytes_per_s * 0.25, time_s * bytes_per_s, "analytic"))
    for i in range(15):
        rows.append((f"void my_library::an_extremely_long_fused_kernel_name_{i}<128, 256>(float*, int)",
                     f"mylib::very_long_custom_operator_name_{i}", "other", f"model.custom.block_{i}", "", "", 10,
                     2.0e-4, math.nan, math.nan, "none"))
    for i in range(3):
        rows.append((f"copy_kernel_{i}", "aten::copy_", "copy", f"model.copy{i}", "bf16", "simt", 10, 1.0e-4, 0.0,
                     1.0e8, "analytic"))
    return rows


def test_crowded_chart_stays_legible() -> None:
    data = make_profile(_crowded_rows())
    fig = plot_profile(data, top=30)
    labels = _texts(fig, "label:")
    assert 0 < len(labels) <= MAX_LABELS
    # the twelve GEMMs sit on one spot: one label names them all, the largest group first
    assert labels["label:1"].get_text() == "1-12. mm · fc1"
    assert not any(t.get_text().startswith(("2.", "3.")) for t in labels.values())
    above = data.kernels["above_roof"].astype(bool).sum()
    assert above == 4
    note = _texts(fig, "note:")["note:above_roof"].get_text()
    assert note.startswith(f"⚠ {above} groups above their roof")
    renderer = fig.canvas.get_renderer()
    width = fig.bbox.width
    for gid, text in _texts(fig, "note:").items():
        box = text.get_window_extent(renderer)
        assert box.x0 >= 0 and box.x1 <= width, (gid, box.x1, width)
    unknown = _texts(fig, "note:")["note:unknown"].get_text()
    assert unknown.endswith(" more") and "cost unknown" in unknown  # the rest counted, not cut off
    points = np.concatenate([c.get_offsets() for c in fig.axes[0].collections
                             if (c.get_gid() or "").startswith("points:")])
    assert len(points) == (data.kernels["cost_source"] != "none").sum()  # zero-FLOP copies drawn too


def test_rank_ranges_and_fitted_list() -> None:
    assert rank_ranges([1, 2, 3, 6]) == "1-3,6" and rank_ranges([4, 5]) == "4,5" and rank_ranges([7]) == "7"
    assert fitted_list(len, 22, "x: ", ["aaaa", "bbbb", "cccc", "dddd"]) == "x: aaaa, bbbb, +2 more"
    assert fitted_list(len, 100, "x: ", ["a", "b"]) == "x: a, b"
    assert fitted_list(len, 10, "x: ", ["aaaaaaaaaa"]) == "x: +1 more"


def test_side_table_keeps_its_rows_apart() -> None:
    fig = plot_profile(make_profile(_crowded_rows()), top=30)
    table = _texts(fig, "table:")
    rows = [gid for gid in table if gid.startswith("table:row:")]
    assert len(rows) == TABLE_ROWS and "+ 35 more groups" in table["table:rest"].get_text()
    renderer = fig.canvas.get_renderer()
    boxes = sorted((t.get_window_extent(renderer) for gid, t in table.items()
                    if gid.startswith(("table:row:", "table:kernel:"))), key=lambda b: -b.y1)
    for upper, lower in zip(boxes, boxes[1:]):
        assert lower.y1 <= upper.y0 + 1, (upper, lower)


def test_side_panel_and_terminal_give_time_per_iteration_as_show_does() -> None:
    from rooflinectl.outputs.plain_text import plain_text
    from rooflinectl.outputs.plot_terminal import render_terminal
    from rooflinectl.units import seconds

    data = make_profile()
    data.summary["iterations"] = 4
    top = data.kernels.sort_values("time_s", ascending=False).iloc[0]
    per_it = seconds(top["time_s"] / 4)  # the number format `show` uses (outputs/table.number_cells)
    fig = plot_profile(data, top=5)
    table = _texts(fig, "table:")
    assert "time/it" in table["table:header"].get_text() and per_it in table["table:row:1"].get_text()
    assert "per iteration (4 iterations)" in _texts(fig, "subtitle")["subtitle"].get_text()
    text = plain_text(render_terminal(data, width=100, top=5), 100)
    assert "time/it" in text and per_it in text
