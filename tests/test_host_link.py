"""The host-link roofs host transfers are held against: spec from the PCIe link or NVLink-C2C,
measured pinned / pageable / peer copies, and which roof a memcpy meets."""

from __future__ import annotations

import pandas as pd
import pytest
from test_ceilings_build import H200_NVML, H200_TORCH

from rooflinectl.attribution.iterations import Iterations
from rooflinectl.attribution.steady import setup_figures
from rooflinectl.attribution.transfers import copy_link, crosses_link, memory_level
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
    assert c.memory_roof("host_pageable", fall_back=True) == Roof(50e9, "spec")
    assert c.memory_roof("peer", fall_back=True) == Roof(50e9, "spec")
    assert c.memory_roof("host_pageable", fall_back=False) is None  # asked for the level itself: not there
    old = Ceilings("x", "cuda", memory_bytes_per_s={"dram": Roof(4e12, "spec")})  # a profile from before host roofs
    assert old.memory_roof("host_pageable", fall_back=True) == Roof(4e12, "spec")
    assert old.memory_roof("host_pinned", fall_back=False) is None


def test_one_lookup_where_the_two_used_to_disagree() -> None:
    """The estimate of a level counts with or without fall-back (the old placement lookup skipped
    it and gave DRAM), and a cache level never falls back to DRAM (a slower roof is no bound on it)."""
    c = Ceilings("x", "cuda", memory_bytes_per_s={"dram": Roof(4e12, "spec")},
                 details={"level_estimates": {"l1": {"value": 30e12, "source": "estimate"},
                                              "host_pinned": {"value": 60e9, "source": "estimate"}}})
    for fall_back in (True, False):
        assert c.memory_roof("l1", fall_back=fall_back) == Roof(30e12, "estimate")
        assert c.memory_roof("l2", fall_back=fall_back) is None
        assert c.memory_roof("host_pinned", fall_back=fall_back) == Roof(60e9, "estimate")
    assert c.memory_roof("host_pageable", fall_back=True) == Roof(60e9, "estimate")  # pinned's estimate bounds it
    assert Ceilings("x", "cuda").memory_roof("peer", fall_back=True) is None  # no DRAM roof either: nothing to say


# CUPTI's memcpy kinds by hand (H host, D device, A CUDA array in device memory, P peer device):
# the link each crosses, or None where the copy stays in one device's memory.
CUPTI_KINDS = {
    "HtoD": ("Pinned", "Device", "host_pinned"), "DtoH": ("Device", "Pageable", "host_pageable"),
    "HtoA": ("Pageable", "Array", "host_pageable"), "AtoH": ("Array", "Pinned", "host_pinned"),
    "HtoH": ("Pinned", "Pinned", "host_pinned"), "PtoP": ("Device", "Device", "peer"),
    "DtoD": ("Device", "Device", None), "DtoA": ("Device", "Array", None),
    "AtoD": ("Array", "Device", None), "AtoA": ("Array", "Array", None),
}


@pytest.mark.parametrize("kind", sorted(CUPTI_KINDS))
def test_one_classifier_for_attribution_and_analysis(kind: str) -> None:
    """The setup line's transfers, the loop finder's weights and the roof a copy meets read the
    same classifier: a copy over a link is a transfer exactly when its level is not DRAM."""
    src, dst, link = CUPTI_KINDS[kind]
    name = f"Memcpy {kind} ({src} -> {dst})"
    assert copy_link(name) == link
    assert memory_level(name) == (link or "dram")
    assert crosses_link(pd.Series([name, "Memset (Device)", "void gemm_kernel<128>"])).tolist() == [link is not None, False, False]


def test_setup_transfers_count_array_copies() -> None:
    """HtoA / AtoH (copies into CUDA arrays) cross the host link: the setup line counts them."""
    setup = pd.DataFrame({"kernel": ["Memcpy HtoA (Pageable -> Array)", "Memcpy DtoD (Device -> Device)", "k"],
                          "time_s": [3e-3, 1e-3, 2e-3], "bytes": [4e6, 1e6, 0.0]})
    figures = setup_figures(setup, Iterations("none"), window_s=1.0, run_wall_s=2.0)
    assert figures["setup_transfer_time_s"] == pytest.approx(3e-3) and figures["setup_transfer_bytes"] == 4e6


@pytest.mark.parametrize("kind", sorted(CUPTI_KINDS))
def test_attribution_counts_each_copy_by_the_same_classifier(kind: str) -> None:
    """A copy inside one device's memory reads and writes its bytes (2x); one over a link moves
    them once, and its note names that link (a peer copy is not a host-device one)."""
    from rooflinectl.attribution.join import _transfer_attribution
    from rooflinectl.capture.read.raw import RawKernel

    src, dst, link = CUPTI_KINDS[kind]
    k = RawKernel(f"Memcpy {kind} ({src} -> {dst})", "gpu_memcpy", 0, 10, -1, 1, bytes=1000)
    cost = _transfer_attribution(k, "aten::copy_").cost
    assert cost.bytes == (1000 if link else 2000)
    expected = "device copy" if link is None else "peer copy" if link == "peer" else "host-device copy"
    assert cost.note.startswith(expected), cost.note
