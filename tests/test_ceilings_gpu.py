"""GPU tests (the H200 machine): detection reads the device, measuring fills every ceiling.

No timed assertions: the figures go to docs/benchmarks/ceilings.md, checked there against the
reference figures by scripts/bench_ceilings.py.
"""

from __future__ import annotations

import json

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
    from rooflinectl.ceilings import current_ceilings
    from rooflinectl.ceilings.detect import detect_gpu
    from rooflinectl.ceilings.measure_gpu import measure_fma, measure_launch

    info = detect_gpu()
    launch = measure_launch(info)
    floor = [m for m in launch if m.key == "launch.empty_kernel"][0]
    assert floor.value is not None and 0 < floor.value < 1e-3, floor
    fma = measure_fma(info, "fp32")
    assert fma.value is not None and fma.value > 1e12, fma
    c = current_ceilings("cuda")
    json.dumps(c.to_dict())
