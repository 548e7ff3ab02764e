"""The link roof: estimated from NVLink/PCIe facts, measured (all-reduce busbw per size), cached,
and collectives placed against it."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from rooflinectl.analysis.links import link_at_size, message_bytes
from rooflinectl.analysis.roofline import place_on_roofline
from rooflinectl.ceilings import cache
from rooflinectl.ceilings.build import apply_measurements, gpu_spec_ceilings
from rooflinectl.ceilings.detect import GpuInfo
from rooflinectl.ceilings.measure_link import bus_bytes_per_s, keep_multicast_off, reps_for
from rooflinectl.ceilings.measurement import Measurement
from rooflinectl.ceilings.model import Ceilings
from rooflinectl.ceilings.topology import link_spec_roof, read_topology


class _LinkNvml:
    """NVML as two GPUs with `links` NVLink 4 links up each (or none: PCIe gen5 x16)."""

    NVML_NVLINK_MAX_LINKS = 18
    NVML_P2P_CAPS_INDEX_NVLINK = 3
    NVML_P2P_STATUS_OK = 0

    def __init__(self, links: int) -> None:
        self.links = links

    def nvmlInit(self) -> None: ...
    def nvmlDeviceGetCount(self) -> int: return 2
    def nvmlDeviceGetHandleByIndex(self, i: int) -> int: return i
    def nvmlDeviceGetName(self, h: int) -> bytes: return b"NVIDIA H200"
    def nvmlDeviceGetUUID(self, h: int) -> str: return f"GPU-{h}"
    def nvmlDeviceGetMaxPcieLinkGeneration(self, h: int) -> int: return 5
    def nvmlDeviceGetMaxPcieLinkWidth(self, h: int) -> int: return 16
    def nvmlDeviceGetP2PStatus(self, a: int, b: int, caps: int) -> int: return 0 if self.links else 2

    def nvmlDeviceGetNvLinkState(self, h: int, link: int) -> int:
        if not self.links:
            raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")
        return 1 if link < self.links else 0

    def nvmlDeviceGetNvLinkVersion(self, h: int, link: int) -> int: return 4


def test_nvlink_spec_roof_is_links_times_25_gbps() -> None:
    topo = read_topology(_LinkNvml(18), with_smi=False)
    assert [g["nvlink_active"] for g in topo["gpus"]] == [18, 18]
    assert topo["p2p_nvlink"] == [[0, 1, True]]
    roof = link_spec_roof(topo, "GPU-1")
    assert roof is not None and roof.value == pytest.approx(18 * 25e9) and roof.source == "spec"


def test_without_nvlink_the_pcie_lanes_set_the_roof() -> None:
    roof = link_spec_roof(read_topology(_LinkNvml(0), with_smi=False))
    assert roof is not None and roof.value == pytest.approx(32e9 * 16 * 128 / 130 / 8)  # Gen5: 32 GT/s, 128b/130b


def test_one_gpu_has_no_link() -> None:
    assert link_spec_roof({"gpus": [{"nvlink_active": 18}]}) is None


def test_nccl_tests_bus_bandwidth() -> None:
    # 1 GiB in 5 ms over 2 GPUs: algbw 214.7 GB/s, busbw x 2(2-1)/2 = the same; over 8: x 1.75
    assert bus_bytes_per_s(1 << 30, 5e-3, 2) == pytest.approx((1 << 30) / 5e-3)
    assert bus_bytes_per_s(1 << 30, 5e-3, 8) == pytest.approx((1 << 30) / 5e-3 * 1.75)
    assert reps_for(4096) == 200 and reps_for(1 << 30) == 9  # 0.1 s at 100 GB/s + 20 us a call


def test_multicast_stays_off_unless_the_environment_says_otherwise() -> None:
    env = {"NCCL_NVLS_ENABLE": "1"}
    keep_multicast_off(env)
    assert env == {"NCCL_NVLS_ENABLE": "1", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


def _h200() -> Ceilings:
    return gpu_spec_ceilings(GpuInfo(name="NVIDIA H200", sms=132, max_sm_clock_hz=1.98e9, compute_capability=(9, 0)))


def _link_measurements() -> list[Measurement]:
    sizes = [4096, 1 << 20, 1 << 26, 1 << 30]
    busbw = [2e9, 60e9, 300e9, 360e9]
    out = [Measurement(f"link.all_reduce.{s}", b, "bytes/s", "test") for s, b in zip(sizes, busbw)]
    out.append(Measurement("link.all_reduce", 360e9, "bytes/s", "best", details={
        "gpus": 2, "collective": "all_reduce", "sizes_bytes": sizes, "bus_bytes_per_s": busbw}))
    out.append(Measurement("link.topology", None, "", "nvml", details={"gpus": [{"nvlink_active": 18}] * 2}))
    return out


def test_measured_link_becomes_the_roof_with_its_curve() -> None:
    ceilings = apply_measurements(_h200(), _link_measurements())
    assert ceilings.link() is not None and ceilings.link().value == 360e9 and ceilings.link().source == "measured"
    assert ceilings.details["link"]["topology"]["gpus"][0]["nvlink_active"] == 18
    # log-size interpolation between 1 MiB (60 GB/s) and 64 MiB (300 GB/s): 8 MiB is half-way in log2 (20 -> 26: 23)
    assert link_at_size(ceilings, 1 << 23) == pytest.approx(60e9 + (300e9 - 60e9) * 3 / 6)
    assert link_at_size(ceilings, 1 << 40) == pytest.approx(360e9)  # clamped at the ends
    again = Ceilings.from_dict(ceilings.to_dict())
    assert again.link() == ceilings.link()


def _collective_rows() -> pd.DataFrame:
    base = {"kernel": "ncclDevKernel_AllReduce", "op": "c10d::allreduce_", "op_family": "collective", "unit": "link",
            "precision": "fp32", "dtype": "fp32", "flops": 0.0, "cost_source": "analytic"}
    return pd.DataFrame([
        {**base, "shapes": "[268435456]", "calls": 2, "time_s": 2 * 4e-3, "bytes": 2 * 268435456 * 4.0},
        {**base, "shapes": "[1024]", "calls": 10, "time_s": 10 * 20e-6, "bytes": 10 * 4096.0},
    ])


def test_collectives_are_held_against_the_link() -> None:
    ceilings = apply_measurements(_h200(), _link_measurements())
    placed = place_on_roofline(_collective_rows(), ceilings)
    big, small = placed.iloc[0], placed.iloc[1]
    # 1 GiB per call in 4 ms: busbw 268.4 GB/s against a 360 GB/s link
    assert big["efficiency"] == pytest.approx((1 << 30) / 4e-3 / 360e9)
    assert big["bound"] == "link" and math.isnan(big["attainable_flops_per_s"])
    assert small["bound"] == "latency"  # 4 KiB: the measured link reaches 2 GB/s there, under half its peak


def test_without_a_link_roof_a_collective_has_no_efficiency() -> None:
    placed = place_on_roofline(_collective_rows(), Ceilings("cpu", "cpu", memory_bytes_per_s=_h200().memory_bytes_per_s))
    assert placed["efficiency"].isna().all() and set(placed["bound"]) <= {"link", "latency"}


def test_message_bytes_reads_both_sides() -> None:
    assert message_bytes("[250] -> [1000]", "bf16") == 2000
    assert math.isnan(message_bytes("", "fp32"))


def test_a_gpu_without_its_own_measurement_borrows_one_of_the_same_model(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("ROOFLINECTL_CACHE_DIR", str(tmp_path))
    measured = {"uuid": "GPU-0", "driver": "580", "torch": "2.11"}
    cache.store("cuda", measured, _link_measurements(), measured_at="2026-11-30", extra={"device": {"name": "NVIDIA H200"}})
    cache.store("cuda", {"uuid": "GPU-9", "driver": "580", "torch": "2.11"}, [], measured_at="2026-12-01",
                extra={"device": {"name": "NVIDIA B200"}})
    found = cache.load_same_model("cuda", {"uuid": "GPU-1", "driver": "580", "torch": "2.11"}, "NVIDIA H200")
    assert found is not None and found[1]["identity"]["uuid"] == "GPU-0"
    assert cache.load_same_model("cuda", {"uuid": "GPU-1", "driver": "575", "torch": "2.11"}, "NVIDIA H200") is None


def test_ceilings_table_lists_the_link_and_its_curve_in_bytes_per_second() -> None:
    import io

    from rich.console import Console

    from rooflinectl.outputs.ceilings_table import render_ceilings

    ceilings = apply_measurements(_h200(), _link_measurements())
    buffer = io.StringIO()
    Console(file=buffer, width=200).print(render_ceilings(ceilings))
    lines = {line.split()[0]: line for line in buffer.getvalue().splitlines() if line.strip()}
    assert "360" in lines["link.intra_node"] and "GB/s" in lines["link.intra_node"]
    assert "GB/s" in lines["link.all_reduce.1048576"] and "FLOP" not in lines["link.all_reduce.1048576"]
    assert "Link topology seen: 2 GPU(s)" in buffer.getvalue()
