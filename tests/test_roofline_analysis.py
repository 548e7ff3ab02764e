"""place_on_roofline on a constructed kernel table against constructed ceilings.

attainable = min(peak, AI * BW); roof_time = max(flops / peak, bytes / BW);
efficiency = roof_time / time; bound = latency (roof time per call under the kernel floor),
memory (bytes take at least as long as FLOPs), compute, or unknown (cost not known).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from rooflinectl.analysis.roofline import ABOVE_ROOF, place_on_roofline
from rooflinectl.ceilings.model import Ceilings, Roof

BW = 1e12  # DRAM bytes/s
SIMT_FP32 = 1e13  # FLOP/s
TENSOR_BF16 = 1e15  # FLOP/s
FLOOR = 2e-6  # s


@pytest.fixture
def ceilings() -> Ceilings:
    return Ceilings(
        device_name="test device", device_kind="cuda",
        memory_bytes_per_s={"dram": Roof(BW, "spec")},
        compute_flops_per_s={"simt.fp32": Roof(SIMT_FP32, "spec"), "tensor.bf16": Roof(TENSOR_BF16, "spec")},
        kernel_floor_s=Roof(FLOOR, "estimate"),
    )


ROWS = {
    # name:          unit,     precision, flops,  bytes,  time_s, calls
    "gemm":          ("tensor", "bf16", 1e12, 5e8, 2e-3, 1),
    "elementwise":   ("simt", "fp32", 1e6, 1.2e9, 2e-3, 1),
    "tiny_copy":     ("simt", "fp32", 0.0, 1e6, 1e-5, 1),
    "unknown":       ("simt", "fp32", math.nan, math.nan, 1e-3, 1),
    "above_roof":    ("simt", "fp32", 0.0, 4e9, 1e-3, 1),
    "many_small":    ("simt", "fp32", 0.0, 1e7, 1e-4, 10),
    "one_big":       ("simt", "fp32", 0.0, 1e7, 1e-4, 1),
    "fp16_simt":     ("simt", "fp16", 1e10, 1e6, 2e-3, 1),
    "no_fp8_roof":   ("tensor", "fp8", 1e12, 1e9, 2e-3, 1),
    "no_bytes":      ("simt", "fp32", 1e7, 0.0, 1e-5, 1),
}


@pytest.fixture
def table() -> pd.DataFrame:
    records = [dict(kernel=name, unit=u, precision=p, flops=f, bytes=b, time_s=t, calls=c)
               for name, (u, p, f, b, t, c) in ROWS.items()]
    return pd.DataFrame(records)


@pytest.fixture
def placed(table, ceilings) -> pd.DataFrame:
    return place_on_roofline(table, ceilings).set_index("kernel")


def test_input_table_untouched(table, ceilings):
    before = table.copy()
    out = place_on_roofline(table, ceilings)
    pd.testing.assert_frame_equal(table, before)
    assert len(out) == len(table)


def test_compute_bound_gemm(placed):
    g = placed.loc["gemm"]
    assert g["intensity"] == pytest.approx(2000.0)  # 1e12 FLOP / 5e8 B
    assert g["attainable_flops_per_s"] == pytest.approx(TENSOR_BF16)  # min(1e15, 2000 * 1e12)
    assert g["roof_time_s"] == pytest.approx(1e-3)  # max(1e12/1e15, 5e8/1e12) = max(1e-3, 5e-4)
    assert g["efficiency"] == pytest.approx(0.5)  # 1e-3 / 2e-3
    assert g["achieved_flops_per_s"] == pytest.approx(5e14)  # 1e12 / 2e-3
    assert g["achieved_bytes_per_s"] == pytest.approx(2.5e11)  # 5e8 / 2e-3
    assert g["headroom_s"] == pytest.approx(1e-3)  # 2e-3 - 1e-3
    assert g["bound"] == "compute"
    assert not g["above_roof"]


def test_memory_bound_elementwise(placed):
    e = placed.loc["elementwise"]
    assert e["intensity"] == pytest.approx(1e6 / 1.2e9)
    assert e["attainable_flops_per_s"] == pytest.approx(1e6 / 1.2e9 * BW)  # AI * BW, under the peak
    assert e["roof_time_s"] == pytest.approx(1.2e-3)  # 1.2e9 B / 1e12 B/s
    assert e["efficiency"] == pytest.approx(0.6)  # 1.2e-3 / 2e-3
    assert e["bound"] == "memory"


def test_latency_bound_small_work(placed):
    c = placed.loc["tiny_copy"]
    assert c["intensity"] == 0.0  # a copy: no FLOPs
    assert c["attainable_flops_per_s"] == 0.0
    assert c["roof_time_s"] == pytest.approx(1e-6)  # 1e6 B / 1e12 B/s, under the 2e-6 s floor
    assert c["efficiency"] == pytest.approx(0.1)  # 1e-6 / 1e-5
    assert c["bound"] == "latency"


def test_latency_is_judged_per_call(placed):
    assert placed.loc["many_small"]["bound"] == "latency"  # 1e-5 s roof over 10 calls: 1e-6 s each
    assert placed.loc["one_big"]["bound"] == "memory"  # the same work in one call: 1e-5 s >= floor
    assert placed.loc["many_small"]["efficiency"] == pytest.approx(0.1)  # 1e-5 / 1e-4 either way


def test_unknown_cost(placed):
    u = placed.loc["unknown"]
    assert u["bound"] == "unknown"
    assert math.isnan(u["efficiency"]) and math.isnan(u["roof_time_s"])
    assert math.isnan(u["achieved_flops_per_s"]) and math.isnan(u["headroom_s"])
    assert not u["above_roof"]


def test_above_roof_flagged(placed):
    a = placed.loc["above_roof"]
    assert a["efficiency"] == pytest.approx(4.0)  # 4e9 B needs 4e-3 s at the roof, took 1e-3 s
    assert a["efficiency"] > ABOVE_ROOF
    assert a["above_roof"]
    assert a["headroom_s"] == 0.0  # clipped, never negative
    assert a["bound"] == "memory"
    assert placed["above_roof"].sum() == 1  # nothing else is above its roof


def test_half_precision_simt_uses_fp32_roof(placed):
    h = placed.loc["fp16_simt"]
    assert h["attainable_flops_per_s"] == pytest.approx(SIMT_FP32)  # min(1e13, 1e4 * 1e12)
    assert h["roof_time_s"] == pytest.approx(1e-3)  # 1e10 / 1e13
    assert h["bound"] == "compute"
    assert h["efficiency"] == pytest.approx(0.5)


def test_missing_compute_roof_is_unbounded(placed):
    f = placed.loc["no_fp8_roof"]
    assert f["attainable_flops_per_s"] == pytest.approx(1000.0 * BW)  # min(inf, AI * BW)
    assert f["roof_time_s"] == pytest.approx(1e-3)  # only the memory roof: 1e9 / 1e12
    assert f["bound"] == "memory"


def test_zero_bytes_gives_infinite_intensity(placed):
    z = placed.loc["no_bytes"]
    assert math.isinf(z["intensity"])
    assert z["attainable_flops_per_s"] == pytest.approx(SIMT_FP32)  # min(peak, inf)
    assert z["roof_time_s"] == pytest.approx(1e-6)  # 1e7 / 1e13
    assert z["bound"] == "latency"  # 1e-6 s of work, under the floor


def test_time_share(placed):
    total = sum(row[4] for row in ROWS.values())
    assert placed["time_share"].sum() == pytest.approx(1.0)
    assert placed.loc["gemm"]["time_share"] == pytest.approx(2e-3 / total)
    assert np.all(placed["time_share"] >= 0)


def test_compute_roof_lookup(ceilings):
    assert ceilings.compute_roof("tensor", "bf16").value == TENSOR_BF16
    assert ceilings.compute_roof("simt", "int").value == SIMT_FP32  # integer work: fp32 SIMT roof
    assert ceilings.compute_roof("simt", "fp64") is None  # no stand-in for fp64
    assert ceilings.compute_roof("tensor", "fp8") is None
    assert Ceilings.from_dict(ceilings.to_dict()) == ceilings
