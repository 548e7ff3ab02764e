"""GPU tests (the H200 machine): detection reads the device, measuring fills every ceiling.

No timed assertions: the figures go to docs/benchmarks/ceilings.md, checked there against the
reference figures by scripts/bench_ceilings.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu


def test_detect_reads_the_basic_facts():
    from rooflinectl.ceilings.detect import detect_gpu

    info = detect_gpu()
    assert info.sms and info.sms > 0, info
    assert info.l2_bytes and info.l2_bytes > 0, info
    assert info.compute_capability is not None, info
    assert info.max_sm_clock_hz and info.max_sm_clock_hz > 1e8, info


def test_current_ceilings_cuda_without_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ROOFLINECTL_CACHE_DIR", str(tmp_path))
    from rooflinectl.ceilings import current_ceilings

    c = current_ceilings("cuda")
    assert c.device_kind == "cuda"
    assert c.dram().value > 0
    assert c.compute_roof("simt", "fp32") is not None
    assert c.details["cache"] is None


def test_measure_small_budget_fills_roofs_and_caches(tmp_path, monkeypatch):
    monkeypatch.setenv("ROOFLINECTL_CACHE_DIR", str(tmp_path))
    from rooflinectl.ceilings import current_ceilings, measure_ceilings, measure_gpu
    from rooflinectl.ceilings.detect import detect_gpu

    info = detect_gpu()
    launch = measure_gpu.measure_launch(info)
    floor = [m for m in launch if m.key == "launch.empty_kernel"][0]
    assert floor.value is not None and 0 < floor.value < 1e-3, floor
    fma = measure_gpu.measure_fma(info, "fp32")
    assert fma.value is not None and fma.value > 1e12, fma

    measured = measure_ceilings("cuda", budget_s=6.0)
    path = Path(measured.details["cache"])
    assert path.parent == tmp_path and path.is_file()  # written where ROOFLINECTL_CACHE_DIR says
    roofs = {**measured.memory_bytes_per_s, **measured.compute_flops_per_s}
    assert any(r.source == "measured" for r in roofs.values()), roofs
    json.dumps(measured.to_dict())

    # a second call and a profile's ceilings read the cache: measuring again would fail here
    monkeypatch.setattr(measure_gpu, "gpu_steps", lambda info: pytest.fail("measured again instead of reading the cache"))
    for again in (measure_ceilings("cuda", budget_s=6.0), current_ceilings("cuda")):
        assert again.details["cache"] == str(path)
        assert {k: (r.value, r.source) for k, r in {**again.memory_bytes_per_s, **again.compute_flops_per_s}.items()} \
            == {k: (r.value, r.source) for k, r in roofs.items()}


def test_host_link_is_measured_pinned_and_pageable():
    from rooflinectl.ceilings import measure_gpu
    from rooflinectl.ceilings.detect import detect_gpu

    found = {m.key: m for m in measure_gpu.measure_host_link(detect_gpu())}
    assert set(found) == {"host.htod_pinned", "host.dtoh_pinned", "host.htod_pageable", "host.dtoh_pageable"}
    for m in found.values():
        assert m.value is not None and 1e9 < m.value < 1e12, m  # between 1 GB/s and 1 TB/s: a host link
    assert found["host.htod_pinned"].value > found["host.htod_pageable"].value, found
