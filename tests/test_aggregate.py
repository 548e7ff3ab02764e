"""One aggregation, one rule for unknown costs (rooflinectl/aggregate.py), and one matcher for
`diff` and `plot BEFORE AFTER` (analysis/matching.py)."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from test_plot_helpers import attention_pair, h200_ceilings

from rooflinectl.aggregate import aggregate
from rooflinectl.analysis.charts import compare_for_chart
from rooflinectl.analysis.diff import diff_profiles
from rooflinectl.analysis.regroup import regroup
from rooflinectl.attribution.group import group_launches
from rooflinectl.profile_model import ProfileData


def rows() -> pd.DataFrame:
    return pd.DataFrame({
        "module": ["attn", "attn", "mlp", "mlp"],
        "calls": [2, 1, 4, 4],
        "time_s": [1.0, 2.0, 3.0, 4.0],
        "flops": [10.0, math.nan, 30.0, 40.0],
        "bytes": [5.0, math.nan, 6.0, 7.0],
        "cost_source": ["analytic", "none", "analytic", "triton"],
    })


def test_a_group_with_an_unknown_cost_is_unknown() -> None:
    out = aggregate(rows(), ["module"]).set_index("module")
    assert out.loc["attn", "time_s"] == 3.0 and out.loc["attn", "calls"] == 3
    assert math.isnan(out.loc["attn", "flops"]) and math.isnan(out.loc["attn", "bytes"])  # never 10 FLOPs in 3 s
    assert out.loc["attn", "cost_source"] == "none"
    assert out.loc["mlp", "flops"] == 70.0 and out.loc["mlp", "bytes"] == 13.0
    assert out.loc["mlp", "cost_source"] == "mixed"


def test_every_stage_that_sums_rows_follows_the_rule() -> None:
    table = rows().assign(kernel=["k1", "k2", "k3", "k4"], op=["aten::bmm", "aten::_softmax", "aten::mm", "mm_kernel"],
                          op_family="gemm", shapes="", dtype="bf16", device="cuda", origin="aten", cost_note="",
                          blocks=1.0, threads_per_block=1.0, unit="tensor", precision="bf16", rank=0)
    by_module = regroup(table, "module", h200_ceilings()).set_index("module")
    assert math.isnan(by_module.loc["attn", "flops"]) and by_module.loc["attn", "bound"] == "unknown"
    launches = table.drop(columns=["calls", "rank"]).assign(kernel="k", op="aten::mm", module="attn", start_ns=0,
                                                            end_ns=1, launch_ns=0, registers_per_thread=math.nan,
                                                            shared_bytes_per_block=math.nan)  # one group key
    grouped, sequence = group_launches(launches)
    assert len(grouped) == 1 and math.isnan(grouped.loc[0, "flops"]) and grouped.loc[0, "calls"] == 4
    assert sequence == [0, 0, 0, 0]


def test_diff_and_the_comparison_chart_match_the_same_groups() -> None:
    naive, sdpa = attention_pair()
    chart = compare_for_chart(naive, sdpa).match.pairs
    report = diff_profiles(naive, sdpa)
    assert sorted(chart["level"]) == sorted(g.match for g in report.changed) == ["exact", "module"]
    for pair in chart.itertuples():
        (change,) = [g for g in report.changed if g.match == pair.level]
        assert change.base_time_s == pytest.approx(pair.time_s_base)
        assert change.new_time_s == pytest.approx(pair.time_s_new)


def test_both_compare_per_iteration() -> None:
    naive, sdpa = attention_pair()
    doubled = ProfileData(kernels=sdpa.kernels.assign(time_s=sdpa.kernels["time_s"] * 2, calls=sdpa.kernels["calls"] * 2,
                                                      flops=sdpa.kernels["flops"] * 2, bytes=sdpa.kernels["bytes"] * 2),
                          ceilings=sdpa.ceilings, summary={"iterations": 2})
    once, twice = compare_for_chart(naive, sdpa).match.pairs, compare_for_chart(naive, doubled).match.pairs
    assert list(twice["speedup"]) == pytest.approx(list(once["speedup"]))
    assert [g.new_time_s for g in diff_profiles(naive, doubled).changed] == pytest.approx(
        [g.new_time_s for g in diff_profiles(naive, sdpa).changed])
