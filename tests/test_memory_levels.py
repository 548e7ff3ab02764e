"""The memory level a kernel group's bytes are held to (analysis/memory_levels.py, issue 29):
the rule on made-up launch sequences, and live on the CPU (a loop over a cache-sized tensor is
held to the measured cache roof and stays under it; one over a tensor larger than the cache stays
on DRAM)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rooflinectl.analysis.memory_levels import (
    cache_time_share,
    resident_launches,
    row_levels,
    tensor_numels,
)
from rooflinectl.analysis.roofline import place_on_roofline
from rooflinectl.ceilings.model import Ceilings, Roof

MB = 1e6
L2 = 60 * MB


def _launches(*rows: tuple[str, str, float]) -> tuple[pd.DataFrame, pd.Series]:
    """Launches in order from (kernel, shapes, bytes); the row of a launch is its kernel's first-seen number."""
    frame = pd.DataFrame([{"kernel": k, "op": f"aten::{k}", "shapes": s, "dtype": "bf16", "bytes": b,
                           "time_s": 1e-5} for k, s, b in rows])
    return frame, pd.Series(pd.factorize(frame["kernel"])[0])


def test_tensor_numels_ignores_scalars() -> None:
    assert tensor_numels("[4, 512, 3072] x [] x [4,512, 3072] x [1]") == {4 * 512 * 3072}


def test_an_op_on_the_output_just_written_is_cache_resident() -> None:
    launches, rows = _launches(("gemm", "[4096, 1024] x [1024, 4096]", 40 * MB), ("relu", "[4096, 4096]", 32 * MB),
                               ("gemm2", "[4096, 4096] x [4096, 1024]", 42 * MB), ("add", "[4096, 1024] x [4096, 1024]", 24 * MB))
    # relu's [4096, 4096] is named by no launch before it: DRAM; gemm2 reads what relu wrote, add what gemm2 wrote
    assert resident_launches(launches, rows.to_numpy(), L2).tolist() == [False, False, True, True]
    assert resident_launches(launches, rows.to_numpy(), 30 * MB).tolist() == [False, False, False, True]  # gemm2 too large


def test_the_producer_must_still_be_in_the_cache() -> None:
    """Between producer and consumer, more bytes than the cache holds: evicted, DRAM."""
    launches, rows = _launches(("gemm", "[1024, 1024]", 8 * MB), ("big", "[9000, 9000]", 110 * MB),
                               ("mul", "[1024, 1024]", 8 * MB))
    assert not resident_launches(launches, rows.to_numpy(), L2)[2]
    assert resident_launches(launches, rows.to_numpy(), 100 * MB)[2]  # 8 + 110 / 2 fits


def test_a_producer_without_recorded_shapes_may_have_written_the_input() -> None:
    """RMSNorm's backward on the H200 (Llama-style run): div, then the cast's copy_ (no shapes in
    the trace), then a 34 MB mul of what the copy_ wrote, at 107% of the DRAM roof."""
    launches, rows = _launches(("div", "[4, 1024, 1024] x []", 16.8 * MB), ("copy_", "", 33.6 * MB),
                               ("mul", "[4, 1024, 1024] x []", 33.6 * MB))
    assert resident_launches(launches, rows.to_numpy(), 60 * 2**20).tolist() == [False, False, True]
    assert not resident_launches(launches.assign(shapes=["[10]", "[20]", "[30]"]), rows.to_numpy(), 60 * 2**20)[2]


def test_a_loop_on_one_footprint_is_resident_only_when_it_fits() -> None:
    small, rows = _launches(*[("mul_", "[32768]", 0.25 * MB)] * 5)
    assert resident_launches(small, rows.to_numpy(), L2).tolist() == [False, True, True, True, True]
    large, rows = _launches(*[("mul_", "[100000000]", 800 * MB)] * 5)
    assert not resident_launches(large, rows.to_numpy(), L2).any()


def test_unknown_bytes_and_host_copies_stay_off_the_cache() -> None:
    launches, rows = _launches(("a", "[8]", np.nan), ("a", "[8]", np.nan), ("Memcpy HtoD (Pinned -> Device)", "[8]", 4.0),
                               ("Memcpy HtoD (Pinned -> Device)", "[8]", 4.0))
    assert row_levels(launches, rows, 2, L2, "l2").tolist() == ["dram", "host_pinned"]


def test_a_group_is_cache_resident_when_its_resident_launches_hold_half_its_time() -> None:
    launches, rows = _launches(("x", "[1]", 1 * MB), ("x", "[1]", 1 * MB), ("x", "[1]", 1 * MB))
    launches.loc[0, "time_s"] = 3e-5  # the first (cold) launch is the longest: 3 of 5 parts
    assert row_levels(launches, rows, 1, L2, "l2").tolist() == ["dram"]
    launches.loc[0, "time_s"] = 1e-5
    assert row_levels(launches, rows, 1, L2, "l2").tolist() == ["l2"]
    assert row_levels(launches, rows, 1, None, "l2").tolist() == ["dram"]  # no capacity known: no cache level


def _ceilings(l2: bool = True) -> Ceilings:
    memory = {"dram": Roof(4.66e12, "measured")} | ({"l2": Roof(7.77e12, "measured")} if l2 else {})
    return Ceilings("NVIDIA H200", "cuda", memory, {"simt.fp32": Roof(66.9e12, "spec-clock-scaled", clock_mhz=1980.0)},
                    details={"device": {"l2_bytes": 60 * 2**20}})


def _row(level: str) -> dict:
    return {"kernel": "vectorized_elementwise_kernel", "op": "aten::mul", "shapes": "[4, 1024, 1024]", "dtype": "fp32",
            "calls": 1, "time_s": 32e6 / 5.1e12, "flops": 4.2e6, "bytes": 32e6 / 1.0, "precision": "fp32",
            "unit": "simt", "cost_source": "analytic", "memory_level": level}


def test_placed_rows_are_held_to_their_levels_roof() -> None:
    """A 16 MB mul at 5.1 TB/s: 109% of the DRAM roof, 66% of the L2 roof; a level whose roof the
    ceilings lack is held to DRAM and says so; the time share of cache-resident work is summed."""
    placed = place_on_roofline(pd.DataFrame([_row("dram"), _row("l2")]), _ceilings())
    assert placed["efficiency"].round(3).tolist() == [round(5.1 / 4.66, 3), round(5.1 / 7.77, 3)]
    assert placed["above_roof"].tolist() == [True, False]
    assert placed["suspect"].tolist() == ["bytes", ""]
    assert cache_time_share(placed) == pytest.approx(0.5)
    no_l2 = place_on_roofline(pd.DataFrame([_row("l2")]), _ceilings(l2=False))
    assert no_l2["memory_level"].tolist() == ["dram"] and bool(no_l2["above_roof"].iloc[0])
    host = place_on_roofline(pd.DataFrame([{**_row(""), "kernel": "Memcpy HtoD (Pinned -> Device)"}]), _ceilings())
    assert host["memory_level"].tolist() == ["host_pinned"]


# --- live on the CPU -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cpu_ceilings() -> Ceilings:
    """This CPU's estimate ceilings with its cache roof measured now (skipped where sysfs cannot
    say the last-level cache's size)."""
    from rooflinectl.ceilings.build import apply_measurements, cpu_estimate_ceilings
    from rooflinectl.ceilings.detect import detect_cpu
    from rooflinectl.ceilings.measure_cpu import measure_cache

    cpu = detect_cpu()
    if not cpu.llc_bytes:
        pytest.skip("the last-level cache's size is not readable here")
    return apply_measurements(cpu_estimate_ceilings(cpu), measure_cache(cpu.threads, cpu.llc_bytes))


def _loop_row(ceilings: Ceilings, elements: int, iters: int) -> pd.Series:
    import torch

    from rooflinectl.capture.run.runner import profile_calls
    from rooflinectl.pipeline import profile_data

    x = torch.rand(elements)

    def step() -> None:
        x.mul_(1.0001)

    capture = profile_calls(step, (), {}, warmup=2, iters=iters, device_kind="cpu")
    table = profile_data(capture, command=["test"], completed=True, exit_code=0, ceilings=ceilings).kernels
    rows = table[table["op"] == "aten::mul_"]
    assert len(rows) == 1, table[["kernel", "op", "shapes"]]
    return rows.iloc[0]


def test_a_loop_over_a_cache_sized_tensor_is_held_to_the_cache_roof_and_stays_under_it(cpu_ceilings) -> None:
    assert cpu_ceilings.memory_bytes_per_s["cache"].source == "measured"
    row = _loop_row(cpu_ceilings, 32 * 1024, iters=30)  # 128 KiB of fp32
    assert row["memory_level"] == "cache", row
    assert not row["above_roof"], row


def test_a_loop_over_a_tensor_larger_than_the_cache_stays_on_dram(cpu_ceilings) -> None:
    elements = int(2 * cpu_ceilings.cache_bytes()) // 4  # twice the last-level cache
    row = _loop_row(cpu_ceilings, elements, iters=3)
    assert row["memory_level"] == "dram", row
