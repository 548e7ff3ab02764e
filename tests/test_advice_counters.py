"""Advice from counters: each rule on hand tables (hand-computed savings), silence without
counters, and the recorded H200 pair (a padded GEMM found, a split-K GEMM not)."""

from __future__ import annotations

import pytest
from advice_tables import elementwise, gemm, h200_ceilings, profile
from counters_data import NCU_ROWS, REGION_LAUNCHES, ncu_text, recorded_profile

from rooflinectl.analysis.advice import RULES, Thresholds, advise
from rooflinectl.attribution.counters import join_measurements, launch_keys
from rooflinectl.capture.ncu.csv_parse import measured_launches
from rooflinectl.ceilings.model import Roof
from rooflinectl.pipeline import add_counters

COUNTER_RULES = [r for r in RULES if r.startswith("counters.")]


def measured(row: dict, **counters) -> dict:
    return {**row, "measured_launches": 1, **counters}


def findings(data, rule_id):
    only = Thresholds(disabled_rules=tuple(r for r in RULES if r != rule_id), hide_below_share=0.0)  # every finding
    return [f for f in advise(data, only).findings if f.rule_id == rule_id]


def ceilings_with_l2():
    c = h200_ceilings()
    c.memory_bytes_per_s["l2"] = Roof(10e12, "measured")
    c.details["device"] = {"sms": 132, "l2_bytes": 60 * 2**20}
    return c


def test_wasted_flops_on_a_padded_gemm():
    row = gemm("aten::mm", 4096, 4096, 4096, efficiency=0.7)
    data = profile([measured(row, measured_flops=1.5 * row["flops"], dram_bytes=row["bytes"],
                             measured_precision="tensor.bf16")])
    (f,) = findings(data, "counters.wasted-flops")
    time_s = float(data.kernels.loc[0, "time_s"])
    assert f.numbers["executed_over_useful"] == pytest.approx(1.5)
    assert f.est_saving_s == pytest.approx(time_s * (1 - 1 / 1.5))  # compute-bound: the extra third of the work
    assert f.severity == "warning"
    close = profile([measured(row, measured_flops=1.05 * row["flops"], dram_bytes=row["bytes"],
                              measured_precision="tensor.bf16")])
    assert findings(close, "counters.wasted-flops") == []


def test_a_split_op_is_compared_as_a_whole():
    """attribution splits one op's FLOPs among its kernels by duration (split-K GEMM + reduce)."""
    main = gemm("aten::mm", 4096, 4096, 4096, efficiency=0.7, kernel="gemm_splitK")
    reduce = dict(main, kernel="splitKreduce", flops=0.2 * main["flops"], bytes_=None)
    main = dict(main, flops=0.8 * main["flops"])
    reduce["bytes"] = 0.2 * main["bytes"]
    main["bytes"] = 0.8 * main["bytes"]
    total = main["flops"] + reduce["flops"]
    rows = [measured(main, measured_flops=total, dram_bytes=main["bytes"], measured_precision="tensor.bf16"),
            measured(reduce, measured_flops=1e6, dram_bytes=reduce["bytes"], measured_precision="simt.fp32")]
    assert findings(profile(rows), "counters.wasted-flops") == []


def test_dram_rereads_on_a_large_memory_bound_kernel():
    row = elementwise("aten::add", (8192, 8192), inputs=2, efficiency=0.4)
    data = profile([measured(row, measured_flops=row["flops"], dram_bytes=2 * row["bytes"],
                             measured_precision="simt.fp32")])
    (f,) = findings(data, "counters.dram-rereads")
    assert f.est_saving_s == pytest.approx(float(data.kernels.loc[0, "time_s"]) * 0.5)
    small = elementwise("aten::add", (512, 512), inputs=2, efficiency=0.4)  # 1.5 MiB: writes may sit in L2
    data = profile([measured(small, measured_flops=small["flops"], dram_bytes=2 * small["bytes"])])
    assert findings(data, "counters.dram-rereads") == []


def test_poor_reuse_when_l2_traffic_binds_the_kernel():
    row = elementwise("my_kernel", (8192, 8192), inputs=1, efficiency=0.2, origin="triton")
    data = profile([row], ceilings=ceilings_with_l2())
    time_s = float(data.kernels.loc[0, "time_s"])
    dram = row["bytes"]
    l2 = 10e12 * 0.8 * time_s  # the L2 traffic takes 80% of the kernel's time at the L2 roof
    table = data.kernels.assign(measured_launches=1, measured_flops=row["flops"], dram_bytes=dram, l2_bytes=l2,
                                l1_bytes=l2, measured_precision="simt.fp32")
    data = type(data)(table, data.ceilings, data.metadata, data.summary)
    (f,) = findings(data, "counters.poor-reuse")
    ratio = l2 / dram
    assert f.numbers["ratio"] == pytest.approx(ratio)
    roof_s = float(data.kernels.loc[0, "roof_time_s"])
    assert f.est_saving_s == pytest.approx(min(0.8 * time_s * (1 - 1 / ratio), time_s - roof_s))
    calm = type(data)(table.assign(l2_bytes=1.5 * dram, l1_bytes=1.5 * dram), data.ceilings, data.metadata,
                      data.summary)
    assert findings(calm, "counters.poor-reuse") == []


def test_poor_reuse_saving_is_capped_by_the_roof():
    row = elementwise("my_kernel", (8192, 8192), inputs=1, efficiency=0.45, origin="triton")
    data = profile([row], ceilings=ceilings_with_l2())
    time_s = float(data.kernels.loc[0, "time_s"])
    table = data.kernels.assign(measured_launches=1, measured_flops=row["flops"], dram_bytes=row["bytes"],
                                l2_bytes=10e12 * 0.95 * time_s, l1_bytes=0.0, measured_precision="simt.fp32")
    (f,) = findings(type(data)(table, data.ceilings, data.metadata, data.summary), "counters.poor-reuse")
    # 4.4x the DRAM traffic through L2 (95% of the time at its roof) could save 73% of the time,
    # but the kernel cannot beat its roof: 55% at most
    assert f.est_saving_s == pytest.approx(time_s - float(table.loc[0, "roof_time_s"]))
    assert f.est_saving_s == pytest.approx(0.55 * time_s)


def test_l2_resident_kernel_flagged_instead_of_dram_bound():
    fits = elementwise("aten::mul", (2048, 2048), inputs=2, efficiency=0.95)  # 24 MiB per call
    spills = elementwise("aten::add", (8192, 8192), inputs=2, efficiency=0.95)  # 384 MiB per call
    slow = elementwise("aten::sub", (2048, 2048), inputs=2, efficiency=0.3)  # fits, but nowhere near DRAM speed
    rows = [measured(r, measured_flops=r["flops"], dram_bytes=r["bytes"], l2_bytes=r["bytes"],
                     measured_precision="simt.fp32") for r in (fits, spills, slow)]
    data = profile(rows, ceilings=ceilings_with_l2())
    (f,) = findings(data, "counters.l2-resident")
    assert data.kernels.loc[f.rows[0], "op"] == "aten::mul"
    assert "L2 roof" in f.evidence and f.severity == "info" and f.est_saving_s == 0


def test_counter_rules_are_silent_without_counters():
    rows = [gemm("aten::mm", 4096, 4096, 4096), elementwise("aten::add", (8192, 8192), inputs=2)]
    data = profile(rows, ceilings=ceilings_with_l2())
    for rule_id in COUNTER_RULES:
        assert findings(data, rule_id) == []


def test_recorded_pair_finds_the_padded_gemm_only():
    capture, data, launches = recorded_profile()
    keys = launch_keys(launches, capture.trace)
    region = measured_launches(ncu_text())[NCU_ROWS - REGION_LAUNCHES:]
    data = add_counters(data, keys, join_measurements(keys, region, None), {})
    got = findings(data, "counters.wasted-flops")
    assert [data.kernels.loc[f.rows[0], "shapes"] for f in got] == ["[1024] x [256, 4096] x [4096, 1024]"]
    assert got[0].numbers["executed_over_useful"] == pytest.approx(288 / 256, rel=1e-3)
