"""The link measurement on a machine with two GPUs (nvidia-h200-x2): NCCL all-reduce through both
paths, the bus bandwidth growing with the message size, and its roof below the NVLink spec."""

from __future__ import annotations

import pytest

from rooflinectl.ceilings.measure_link import bus_bytes_per_s, measure_in_process, measure_link
from rooflinectl.ceilings.topology import link_spec_roof, read_topology

pytestmark = [pytest.mark.gpu, pytest.mark.multigpu]
SIZES = (1 << 14, 1 << 20, 1 << 26)


def test_all_reduce_bus_bandwidth_grows_with_the_message() -> None:
    times = measure_in_process(2, SIZES)
    busbw = [bus_bytes_per_s(size, times[size][0], 2) for size in SIZES]
    assert busbw[0] < busbw[1] < busbw[2], busbw  # NCCL's latency dominates small messages
    spec = link_spec_roof(read_topology(with_smi=False))
    assert spec is not None and busbw[2] < 1.05 * spec.value, (busbw, spec)  # never above the link's own rate


def test_measure_link_records_the_roof_curve_and_topology() -> None:
    measured = {m.key: m for m in measure_link()}
    best = measured["link.all_reduce"]
    assert best.value and best.value > 10e9, best  # NVLink between two H200s: hundreds of GB/s
    assert best.details["sizes_bytes"] and len(best.details["sizes_bytes"]) == len(best.details["bus_bytes_per_s"])
    assert measured["link.topology"].details["gpus"]
