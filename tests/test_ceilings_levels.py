"""Memory-level roofs for the hierarchical roofline: the L1 estimate, and measured L1/L2 over it."""

from __future__ import annotations

import pytest
from test_ceilings_build import H200_NVML, H200_TORCH

from rooflinectl.ceilings.build import apply_measurements, gpu_spec_ceilings
from rooflinectl.ceilings.detect import merge_gpu_info
from rooflinectl.ceilings.measurement import Measurement
from rooflinectl.ceilings.model import Ceilings


def h200() -> Ceilings:
    return gpu_spec_ceilings(merge_gpu_info(0, H200_TORCH, None, H200_NVML, None))


def test_l1_is_an_estimate_named_as_such_until_measured():
    ceilings = h200()
    l1 = ceilings.memory_roof("l1", fall_back=False)
    assert l1.value == pytest.approx(132 * 128 * 1.98e9)  # 33.4 TB/s
    assert l1.source == "estimate" and "--measure" in l1.note
    assert "l1" not in ceilings.memory_bytes_per_s  # not drawn on the ordinary chart
    assert ceilings.memory_roof("l2", fall_back=False) is None  # no honest figure without measuring
    measured = apply_measurements(ceilings, [Measurement("l1.read", 25e12, "bytes/s", "triton re-read"),
                                             Measurement("l2.read", 9e12, "bytes/s", "triton .cg read")])
    l1 = measured.memory_roof("l1", fall_back=False)
    assert l1.value == 25e12 and l1.source == "measured"
    assert measured.memory_roof("l2", fall_back=False).value == 9e12


def test_ceilings_round_trip_keeps_the_estimate():
    ceilings = h200()
    again = Ceilings.from_dict(ceilings.to_dict())
    assert again.memory_roof("l1", fall_back=False) == ceilings.memory_roof("l1", fall_back=False)
