"""Before/after comparison chart and the group matching behind it."""

from __future__ import annotations

import numpy as np
from test_plot_helpers import GPU_ROWS, attention_pair, make_profile

from rooflinectl.analysis.charts import compare_for_chart
from rooflinectl.outputs.plot_compare import pair_label, plot_comparison


def test_match_by_kernel_then_op_then_module() -> None:
    naive, sdpa = attention_pair()
    match = compare_for_chart(naive, sdpa).match
    pairs = match.pairs
    pairs["label"] = [pair_label(r.level, r.op_new, r.module_new) for r in pairs.itertuples()]  # the chart's names
    levels = dict(zip(pairs["label"], pairs["level"], strict=True))
    assert levels == {"attn (all ops)": "module", "mm · proj": "exact"}
    attn = pairs.set_index("label").loc["attn (all ops)"]
    assert np.isclose(attn["time_s_base"], 15.6e-3) and np.isclose(attn["time_s_new"], 2.4e-3)
    assert np.isclose(attn["speedup"], 6.5)
    assert match.only_base.empty and match.only_new.empty


def test_unmatched_groups_are_reported() -> None:
    before = make_profile(GPU_ROWS)
    after = make_profile([r for r in GPU_ROWS if r[1] != "aten::embedding"])
    match = compare_for_chart(before, after).match
    assert list(match.only_base["op"]) == ["aten::embedding"] and match.only_new.empty
    fig = plot_comparison(before, after, compare_for_chart(before, after))
    notes = [t.get_text() for t in fig.texts if (t.get_gid() or "").startswith("note:")]
    assert any("Only in before" in n and "embedding" in n for n in notes), notes
    assert any("cost unknown" in n and "rope" in n for n in notes), notes


def test_comparison_draws_arrows_speedups_and_totals() -> None:
    naive, sdpa = attention_pair()
    fig = plot_comparison(naive, sdpa, compare_for_chart(naive, sdpa), names=("naive", "sdpa"))
    ax = fig.axes[0]
    arrows = [t for t in ax.texts if (t.get_gid() or "").startswith("arrow:")]
    assert len(arrows) == 2
    speedups = sorted(t.get_text() for t in ax.texts if (t.get_gid() or "").startswith("speedup:"))
    assert speedups == ["attn (all ops)  6.50×", "mm · proj  1.03×"]
    totals = next(t.get_text() for t in fig.texts if t.get_gid() == "totals")
    assert "naive: 16.2 ms" in totals and "sdpa: 2.98 ms" in totals and "5.44× faster" in totals
    # arrow from the before position to the after position, both inside the axes
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    for arrow in arrows:
        for x, y in (arrow.xy, arrow.xyann):
            assert x0 < x < x1 and y0 < y < y1
    assert "roof:tensor.bf16" in {line.get_gid() for line in ax.lines}
    assert not [t for t in fig.texts if t.get_gid() == "note:above_roof"]


def test_comparison_flags_points_above_the_roof() -> None:
    naive, sdpa = attention_pair()
    sdpa.kernels.loc[0, "time_s"] = 1e-4  # far too fast for its FLOPs: a counting bug
    fig = plot_comparison(naive, sdpa, compare_for_chart(naive, sdpa))
    note = [t.get_text() for t in fig.texts if t.get_gid() == "note:above_roof"]
    assert note and "attn (all ops)" in note[0]
