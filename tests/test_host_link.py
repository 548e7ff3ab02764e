"""The host-link roofs host transfers are held against: spec from the PCIe link or NVLink-C2C,
measured pinned / pageable / peer copies, and which roof a memcpy meets."""

from __future__ import annotations

import pytest
from test_ceilings_build import H200_NVML, H200_TORCH

from rooflinectl.analysis.transfers import level_roof, memory_level
from rooflinectl.ceilings.build import apply_measurements, gpu_spec_ceilings
from rooflinectl.ceilings.detect import merge_gpu_info
from rooflinectl.ceilings.measurement import Measurement
from rooflinectl.ceilings.model import Ceilings, Roof
from rooflinectl.ceilings.specs import pcie_bytes_per_s


def test_pcie_bandwidth_by_hand() -> None:
    # Gen5: 32 GT/s per lane, 128b/130b; 16 lanes; per direction
    assert pcie_bytes_per_s(5, 16) == pytest.approx(32e9 * 16 * 128 / 130 / 8)
    assert pcie_bytes_per_s(3, 8) == pytest.approx(8e9 * 8 * 128 / 130 / 8)
    assert pcie_bytes_per_s(2, 16) == pytest.approx(5e9 * 16 * 0.8 / 8)  # 8b/10b
    assert pcie_bytes_per_s(9, 16) is None


def test_spec_host_link_follows_what_nvml_says() -> None:
    c = gpu_spec_ceilings(merge_gpu_info(0, H200_TORCH, None, {**H200_NVML, "pcie_gen": 5, "pcie_width": 16}, None))
    roof = c.memory_bytes_per_s["host_pinned"]
    assert (roof.source, roof.value) == ("spec", pytest.approx(63.015e9, rel=1e-4))
    assert "Gen5 x16" in roof.note
    unknown = gpu_spec_ceilings(merge_gpu_info(0, H200_TORCH, None, H200_NVML, None)).memory_bytes_per_s["host_pinned"]
    assert unknown.source == "estimate" and unknown.value == pytest.approx(pcie_bytes_per_s(4, 16))
    gh200 = gpu_spec_ceilings(merge_gpu_info(0, {**H200_TORCH, "name": "NVIDIA GH200 480GB"}, None, {}, "no NVML"))
    assert gh200.memory_bytes_per_s["host_pinned"].value == pytest.approx(450e9)  # NVLink-C2C


def test_measured_copies_become_the_host_roofs() -> None:
    c = gpu_spec_ceilings(merge_gpu_info(0, H200_TORCH, None, {**H200_NVML, "pcie_gen": 5, "pcie_width": 16}, None))
    measured = apply_measurements(c, [
        Measurement("host.htod_pinned", 50e9, "bytes/s"), Measurement("host.dtoh_pinned", 53e9, "bytes/s"),
        Measurement("host.htod_pageable", 18e9, "bytes/s"), Measurement("host.dtoh_pageable", 9e9, "bytes/s"),
        Measurement("host.peer", None, "bytes/s", note="one GPU"),
    ])
    assert measured.memory_bytes_per_s["host_pinned"] == Roof(53e9, "measured", "best of measured: host.dtoh_pinned")
    assert measured.memory_bytes_per_s["host_pageable"].value == 18e9
    assert "peer" not in measured.memory_bytes_per_s
    assert measured.dram().value == pytest.approx(4.8e12)  # DRAM untouched


@pytest.mark.parametrize("kernel, level", [
    ("Memcpy HtoD (Pageable -> Device)", "host_pageable"),
    ("Memcpy DtoH (Device -> Pageable)", "host_pageable"),
    ("Memcpy HtoD (Pinned -> Device)", "host_pinned"),
    ("Memcpy DtoH (Device -> Pinned)", "host_pinned"),
    ("Memcpy PtoP (Device -> Device)", "peer"),
    ("Memcpy DtoD (Device -> Device)", "dram"),
    ("Memset (Device)", "dram"),
    ("void at::native::vectorized_elementwise_kernel<4>", "dram"),
])
def test_which_link_a_copy_crosses(kernel: str, level: str) -> None:
    assert memory_level(kernel) == level


def test_missing_roofs_fall_back_to_what_a_copy_can_do_at_best() -> None:
    c = Ceilings("x", "cuda", memory_bytes_per_s={"dram": Roof(4e12, "spec"), "host_pinned": Roof(50e9, "spec")})
    assert level_roof(c, "host_pageable") == ("host_pinned", Roof(50e9, "spec"))
    assert level_roof(c, "peer") == ("host_pinned", Roof(50e9, "spec"))
    old = Ceilings("x", "cuda", memory_bytes_per_s={"dram": Roof(4e12, "spec")})  # a profile from before host roofs
    assert level_roof(old, "host_pageable") == ("dram", Roof(4e12, "spec"))
