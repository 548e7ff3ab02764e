"""What `show` says about clocks: one line when NVML was missing, else the clocks, power,
throttling, roof shifts and other processes, from a recorded H200 capture with samples laid over it."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from nvml_samples import steady_then_capped

from rooflinectl.analysis.clocks import roof_clock_shifts
from rooflinectl.analysis.roofline import place_on_roofline
from rooflinectl.capture.run.session import load_capture
from rooflinectl.ceilings.model import Ceilings, Roof
from rooflinectl.cli.main import main
from rooflinectl.outputs.clocks_text import clock_lines
from rooflinectl.outputs.profile_file import load_profile, save_profile
from rooflinectl.pipeline import profile_data

DATA = Path(__file__).parent / "data"
MS = 1_000_000
H200 = Ceilings("NVIDIA H200", "cuda", {"dram": Roof(4.8e12, "spec")},
                {"tensor.bf16": Roof(132 * 4096 * 1980e6, "spec-clock-scaled", clock_mhz=1980.0),
                 "simt.fp32": Roof(132 * 256 * 1980e6, "spec-clock-scaled", clock_mhz=1980.0)},
                Roof(2e-6, "estimate"))


def _profile(tmp_path: Path, nvml: dict | None) -> Path:
    capture = load_capture(str(DATA / "h200_mlp_bf16.capture.json.gz"))
    if nvml is not None:
        capture.metadata["nvml"] = nvml
    path = tmp_path / "p.json"
    save_profile(profile_data(capture, command=["t"], completed=True, ceilings=H200), path)
    return path


def _show(path: Path) -> str:
    result = CliRunner().invoke(main, ["show", str(path), "--top", "2"])
    assert result.exit_code == 0, result.output
    return result.output


def test_missing_nvml_is_one_line_and_the_table_still_prints(tmp_path):
    message = "NVML unavailable (NVMLError_LibraryNotFound: NVML Shared Library Not Found)"
    out = _show(_profile(tmp_path, {"status": "unavailable", "message": message}))
    mentions = [line for line in out.splitlines() if "NVML" in line or "clocks" in line]
    assert mentions == [f"clocks, power, throttling: not sampled, {message}"]
    assert "attainable" in out  # and the rest is there


def test_profiles_without_nvml_metadata_say_nothing_of_clocks(tmp_path):
    out = _show(_profile(tmp_path, None))
    assert "clocks" not in out and "NVML" not in out


def test_a_power_capped_run_says_its_clocks_throttling_and_roof_shift(tmp_path):
    capture_end = 910 * MS
    nvml = steady_then_capped(0, capture_end, 902 * MS, period_ns=MS)
    nvml["devices"][0]["processes"] = [[0, [[1000, 5 << 30], [2000, 3 << 30]]]]  # we are pid 1000
    path = _profile(tmp_path, nvml)
    summary = load_profile(path).summary["clocks"]
    lines = _show(path).splitlines()
    sm = summary["sm_clock_mhz"]
    head = next(line for line in lines if line.startswith("clocks while kernels ran"))
    assert f"SM {sm['mean']:,.0f} MHz mean (range 1,485-1,980 MHz, device max 1,980 MHz)" in head
    assert "power" in head and "699 W peak (limit 700 W)" in head
    share = summary["throttle_kernel_s"]["sw_power_cap"] / summary["kernel_time_s"]
    assert f"clocks-event reasons over kernel time: sw_power_cap {100 * share:.0f}%" in lines
    bf16 = next(s for s in summary["roof_shifts"] if s["roof"] == "tensor.bf16")
    roof_line = next(line for line in lines if line.startswith("tensor.bf16 roof follows the clock"))
    assert f"{100 * bf16['peak_change']:+.0f}% (held at 1,980 MHz" in roof_line
    assert "GPU shared: 1 other process(es), 3.22 GB: timings are not trustworthy" in lines


@pytest.mark.parametrize(("clock_mhz", "noted"), [(1980 * 0.98, False), (1980 * 1.02, False), (1980 * 0.95, True)])
def test_a_roof_gets_a_line_only_when_the_clock_moved_it_more_than_3_percent(clock_mhz, noted):
    table = pd.DataFrame([dict(kernel="gemm", unit="tensor", precision="bf16", flops=1e12, bytes=1e8, time_s=1e-3,
                               calls=1, sm_clock_mhz=clock_mhz)])
    shifts = roof_clock_shifts(place_on_roofline(table, H200), H200)
    lines = clock_lines({"status": "sampled", "samples": 10, "roof_shifts": shifts})
    assert any(line.startswith("tensor.bf16 roof follows the clock") for line in lines) is noted
