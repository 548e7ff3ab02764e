"""The communication rules on hand-made figures: each finding's estimate computed here by hand."""

from __future__ import annotations

import math

import pytest
from advice_tables import gemm, h200_ceilings, profile, row

from rooflinectl.analysis.advice import advise
from rooflinectl.ceilings.build import apply_measurements
from rooflinectl.ceilings.measurement import Measurement

SIZES = [1 << 12, 1 << 16, 1 << 20, 1 << 24, 1 << 28]
BUSBW = [1e9, 10e9, 80e9, 280e9, 360e9]


def _ceilings():
    return apply_measurements(h200_ceilings(), [Measurement("link.all_reduce", 360e9, "bytes/s", "test", details={
        "gpus": 2, "collective": "all_reduce", "sizes_bytes": SIZES, "bus_bytes_per_s": BUSBW})])


def _allreduce(elements: int, calls: int, time_s: float) -> dict:
    return row("c10d::allreduce_", "collective", f"[{elements}]", flops=0.0, bytes_=float(elements * 4 * calls),
               time_s=time_s, calls=calls, dtype="float32", unit="link", kernel="ncclDevKernel_AllReduce_Sum_f32")


def _rows() -> list[dict]:
    return [gemm("aten::mm", 4096, 4096, 4096, calls=4, efficiency=0.7), _allreduce(16384, 40, 40 * 20e-6)]


def test_exposed_communication_of_one_rank_is_an_upper_bound() -> None:
    comm = {"iterations": 4, "exposed_per_iteration_s": 3e-3, "exposed_s": 12e-3}
    report = advise(profile(_rows(), ceilings=_ceilings(),
                            summary={"communication": comm, "iteration_time_s": 10e-3, "window_s": 40e-3}))
    (found,) = report.findings_of("comm.exposed")
    assert found.est_saving_s == pytest.approx(min(3e-3 * 4, 40 * 20e-6))  # capped by the collective rows' time
    assert "read all ranks' profiles together" in found.evidence
    quiet = advise(profile(_rows(), ceilings=_ceilings(), summary={
        "communication": {**comm, "exposed_per_iteration_s": 0.4e-3}, "iteration_time_s": 10e-3}))
    assert not quiet.findings_of("comm.exposed")  # 4% of a step: under the 5% the rule speaks from


def test_exposed_communication_of_a_rank_set_leaves_the_waiting_to_the_straggler() -> None:
    ranks = [{"rank": 0, "exposed_per_step_s": 5e-3, "wait_per_step_s": 4e-3},
             {"rank": 1, "exposed_per_step_s": 1e-3, "wait_per_step_s": 0.0}]
    dist = {"ranks": ranks, "step_time_s": 20e-3, "steps": 3, "collectives": []}
    rows = [gemm("aten::mm", 8192, 8192, 8192, calls=3, efficiency=0.7), _allreduce(1 << 24, 30, 30e-3)]
    report = advise(profile(rows, ceilings=_ceilings(), summary={"distributed": dist, "window_s": 60e-3}))
    (found,) = report.findings_of("comm.exposed")
    # mean exposed (5 + 1) / 2 = 3 ms a step, mean waiting 2 ms: 1 ms a step of overlap to win, 3 steps
    assert found.est_saving_s == pytest.approx(1e-3 * 3)
    assert found.numbers["wait_per_step_s"] == pytest.approx(2e-3)


def test_small_all_reduces_far_below_the_link_are_told_to_bucket() -> None:
    # 40 all-reduces of 64 KiB (16384 fp32), 20 us each: busbw 65536 / 20e-6 = 3.3 GB/s of a 360 GB/s link
    report = advise(profile(_rows(), ceilings=_ceilings()))
    (found,) = report.findings_of("comm.below-link")
    assert "bucket_cap_mb" in found.recommendation
    # one message of 40 x 64 KiB = 2.5 MiB: the measured curve between 1 MiB (80 GB/s) and 16 MiB (280 GB/s)
    total = 40 * 65536
    at_total = 80e9 + (280e9 - 80e9) * (math.log(total) - math.log(1 << 20)) / (math.log(1 << 24) - math.log(1 << 20))
    assert found.est_saving_s == pytest.approx(40 * 20e-6 - total / at_total)


def test_a_single_rank_never_blames_the_link_for_large_messages() -> None:
    """A large all-reduce slow in one rank's profile may be waiting for the others: not a finding."""
    rows = [gemm("aten::mm", 4096, 4096, 4096, calls=4, efficiency=0.7), _allreduce(1 << 26, 2, 2 * 10e-3)]
    assert not advise(profile(rows, ceilings=_ceilings())).findings_of("comm.below-link")


def test_unbalanced_all_to_all() -> None:
    groups = [{"op": "c10d::alltoall_base_", "shapes": "[1048576]", "dtype": "bf16", "size_bytes": 2 * 1048576,
               "calls": 8, "time_per_call_s": 2e-3, "transfer_per_call_s": 1.5e-3, "bus_bytes_per_call": 1e6,
               "bus_bytes_per_s": 1e6 / 1.5e-3, "imbalance": 1.6}]
    dist = {"ranks": [], "collectives": groups, "steps": 8}
    rows = [gemm("aten::mm", 4096, 4096, 4096, calls=8, efficiency=0.7),
            row("c10d::alltoall_base_", "collective", "[1048576]", flops=0.0, bytes_=8e6, time_s=16e-3, calls=8,
                dtype="bfloat16", unit="link", kernel="ncclDevKernel_SendRecv")]
    (found,) = advise(profile(rows, ceilings=_ceilings(), summary={"distributed": dist})).findings_of(
        "comm.alltoall-imbalance")
    assert found.est_saving_s == pytest.approx(2e-3 * 8 * (1 - 1 / 1.6))
