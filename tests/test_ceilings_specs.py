"""The spec table: real device strings match the right entry, and every entry is self-consistent."""

from __future__ import annotations

import pytest

from rooflinectl.ceilings.specs import PRECISIONS, RATES, SPECS, match_spec, normalise_name

REAL_NAMES = {
    "NVIDIA H100 80GB HBM3": "H100 SXM",
    "NVIDIA H100 PCIe": "H100 PCIe",
    "NVIDIA H100 NVL": "H100 NVL",
    "NVIDIA H200": "H200 SXM",
    "NVIDIA H200 NVL": "H200 NVL",
    "NVIDIA GH200 480GB": "GH200 96GB HBM3",
    "NVIDIA GH200 144G HBM3e": "GH200 144GB HBM3e",
    "NVIDIA A100-SXM4-80GB": "A100 SXM4 80GB",
    "NVIDIA A100-SXM4-40GB": "A100 SXM4 40GB",
    "NVIDIA A100-PCIE-40GB": "A100 PCIe 40GB",
    "NVIDIA A100 80GB PCIe": "A100 PCIe 80GB",
    "NVIDIA A10G": "A10G",
    "NVIDIA A10": "A10",
    "NVIDIA L4": "L4",
    "NVIDIA L40S": "L40S",
    "Tesla V100-SXM2-16GB": "V100 SXM2",
    "Tesla V100-SXM2-32GB": "V100 SXM2",
    "Tesla V100-PCIE-32GB": "V100 PCIe",
    "NVIDIA B200": "B200",
    "NVIDIA GeForce RTX 5090": "GeForce RTX 5090",
    "NVIDIA GeForce RTX 4090": "GeForce RTX 4090",
    "NVIDIA GeForce RTX 3090": "GeForce RTX 3090",
}


@pytest.mark.parametrize("device_name,entry", sorted(REAL_NAMES.items()))
def test_real_device_strings_match(device_name: str, entry: str) -> None:
    spec = match_spec(device_name)
    assert spec is not None, f"{device_name!r} matched nothing"
    assert spec.name == entry, f"{device_name!r} matched {spec.name!r}, expected {entry!r}"


@pytest.mark.parametrize("device_name", [
    "NVIDIA GeForce RTX 3090 Ti", "NVIDIA GB200", "NVIDIA L40", "NVIDIA GeForce GTX 1080",
    "Some Future GPU", "",
])
def test_near_misses_and_unknown_names_match_nothing(device_name: str) -> None:
    assert match_spec(device_name) is None, device_name


def test_normalise_name() -> None:
    assert normalise_name("  NVIDIA   H100 80GB HBM3 ") == "h100 80gb hbm3"
    assert normalise_name("Tesla V100-SXM2-16GB") == "v100-sxm2-16gb"


def test_every_entry_cites_a_source_and_uses_known_keys() -> None:
    keys = {f"{u}.{p}" for u in ("tensor", "simt") for p in PRECISIONS}
    for spec in SPECS:
        assert spec.source.startswith("https://"), spec.name
        assert spec.rates in RATES, spec.name
        assert set(spec.datasheet_flops_per_s) <= keys, spec.name
        assert set(spec.datasheet_flops_per_s) <= set(RATES[spec.rates]), spec.name
        assert 100e9 < spec.dram_bytes_per_s < 10e12, spec.name


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_rates_times_sms_times_boost_agree_with_the_datasheet(spec) -> None:
    """Catches typos and sparse-for-dense mix-ups: the clock-scaled peak is within -10%..+20% of
    the datasheet (datasheets quote tensor peaks at a clock below the maximum)."""
    for key, datasheet in spec.datasheet_flops_per_s.items():
        scaled = spec.clock_scaled_flops_per_s(key, spec.sms, spec.boost_mhz * 1e6)
        assert scaled is not None, (spec.name, key)
        ratio = scaled / datasheet
        assert 0.9 <= ratio <= 1.2, f"{spec.name} {key}: rates give {scaled:.3g}, datasheet {datasheet:.3g}"


def test_h200_figures() -> None:
    spec = match_spec("NVIDIA H200")
    assert spec.dram_bytes_per_s == pytest.approx(4.8e12)
    assert spec.datasheet_flops_per_s["tensor.bf16"] == pytest.approx(989.5e12)
    # 132 SMs x 4096 FLOP/clk x 1.98 GHz (NOTES-profiling.md)
    assert spec.clock_scaled_flops_per_s("tensor.bf16", 132, 1.98e9) == pytest.approx(1070.5e12, rel=1e-3)
    assert spec.clock_scaled_flops_per_s("tensor.fp4", 132, 1.98e9) is None  # Hopper has no fp4
