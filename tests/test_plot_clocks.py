"""`plot --clocks`: the strip of SM clock and power under the chart, checked through its artists;
and the compute roof drawn at the clock the kernels ran at."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from nvml_samples import IDLE, SW_POWER_CAP, nvml_metadata

from rooflinectl.analysis.charts import chart_model
from rooflinectl.capture.run.session import load_capture
from rooflinectl.ceilings.model import Ceilings, Roof
from rooflinectl.cli.main import main
from rooflinectl.errors import EXIT_USAGE
from rooflinectl.outputs.plot import plot_profile
from rooflinectl.outputs.profile_file import save_profile
from rooflinectl.pipeline import profile_data

DATA = Path(__file__).parent / "data"
MS = 1_000_000
BF16 = 132 * 4096 * 1980e6
H200 = Ceilings("NVIDIA H200", "cuda", {"dram": Roof(4.8e12, "spec")},
                {"tensor.bf16": Roof(BF16, "spec-clock-scaled", clock_mhz=1980.0),
                 "simt.fp32": Roof(132 * 256 * 1980e6, "spec-clock-scaled", clock_mhz=1980.0)},
                Roof(2e-6, "estimate"))
# idle until 890 ms, full clock until 902 ms, then the power cap (the counted region: 897-908 ms)
ROWS = [(t * MS, 345, 90, IDLE) if t < 890 else (t * MS, 1980, 520, 0) if t < 902 else (t * MS, 1485, 699, SW_POWER_CAP)
        for t in range(0, 920)]


@pytest.fixture(scope="module")
def capped():
    capture = load_capture(str(DATA / "h200_mlp_bf16.capture.json.gz"))
    capture.metadata["nvml"] = nvml_metadata(ROWS, period_ns=MS)
    return profile_data(capture, command=["t"], completed=True, ceilings=H200)


def _gid(fig, gid: str) -> list:
    return list(fig.findobj(lambda a: a.get_gid() == gid))


def test_strip_draws_every_sample_against_seconds_since_the_first_counted_kernel(capped):
    fig = plot_profile(capped, model=chart_model(capped, clocks=True), dpi=50)
    [sm] = _gid(fig, "clocks:sm")
    [power] = _gid(fig, "clocks:power")
    first_ns = capped.summary["clocks"]["span_ns"][0]
    x, y = sm.get_data()
    assert np.allclose(x, [(t - first_ns) / 1e9 for t, *_ in ROWS])
    assert list(y) == [r[1] for r in ROWS]
    assert list(power.get_ydata()) == [r[2] for r in ROWS]
    [limit] = _gid(fig, "clocks:power_limit")
    assert limit.get_ydata()[0] == 700.0
    # one capped span: from half a period before the first capped sample to half after the last
    [span] = _gid(fig, "clocks:capped")
    xs = span.get_patch_transform().transform(span.get_path().vertices)[:, 0]  # a Polygon before mpl 3.9
    assert xs.min() == pytest.approx((902 * MS - 0.5 * MS - first_ns) / 1e9)
    assert xs.max() == pytest.approx((919 * MS + 0.5 * MS - first_ns) / 1e9)
    [idle] = _gid(fig, "clocks:idle")
    assert len(idle.get_xdata()) == 890
    assert fig.get_size_inches()[1] > plot_profile(capped, dpi=50).get_size_inches()[1]


def test_the_compute_roof_is_drawn_at_the_kernels_clock(capped):
    shift = next(s for s in capped.summary["clocks"]["roof_shifts"] if s["roof"] == "tensor.bf16")
    assert shift["notable"]
    [roof] = [a for a in plot_profile(capped, dpi=50).axes[0].lines if a.get_gid() == "roof:tensor.bf16"]
    assert np.allclose(roof.get_ydata(), BF16 * shift["kernel_clock_mhz"] / 1980)


def test_clocks_through_the_cli(capped, tmp_path):
    path = tmp_path / "capped.profile.json"
    save_profile(capped, path)
    out = tmp_path / "chart.png"
    result = CliRunner().invoke(main, ["plot", str(path), "-o", str(out), "--clocks", "--dpi", "40"])
    assert result.exit_code == 0, result.output
    assert out.stat().st_size > 0


def test_clocks_without_samples_is_one_sentence_exit_2(tmp_path):
    capture = load_capture(str(DATA / "h200_mlp_bf16.capture.json.gz"))
    capture.metadata["nvml"] = {"status": "unavailable", "message": "NVML unavailable (NVMLError_LibraryNotFound)"}
    path = tmp_path / "p.json"
    save_profile(profile_data(capture, command=["t"], completed=True, ceilings=H200), path)
    result = CliRunner().invoke(main, ["plot", str(path), "-o", str(tmp_path / "c.png"), "--clocks"])
    assert result.exit_code == EXIT_USAGE
    assert result.output.strip() == ("rooflinectl: --clocks needs the NVML samples of a GPU run; this profile has none "
                                     "(NVML unavailable (NVMLError_LibraryNotFound)).")
    assert not (tmp_path / "c.png").exists()
    two = CliRunner().invoke(main, ["plot", str(path), str(path), "-o", str(tmp_path / "c.png"), "--clocks"])
    assert two.exit_code == EXIT_USAGE and "one profile" in two.output
