"""`plot --levels`: the hierarchical roofline from counters, checked through its artists."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner
from counters_data import H200, NCU_ROWS, REGION_LAUNCHES, ncu_text, recorded_profile

from rooflinectl.attribution.counters import join_measurements, launch_keys
from rooflinectl.capture.ncu.csv_parse import measured_launches
from rooflinectl.ceilings.model import Ceilings
from rooflinectl.cli.main import main
from rooflinectl.errors import UsageError
from rooflinectl.outputs.plot_levels import plot_levels
from rooflinectl.outputs.profile_file import save_profile
from rooflinectl.pipeline import add_counters
from rooflinectl.profile_model import ProfileData


@pytest.fixture(scope="module")
def profiles():
    capture, data, launches = recorded_profile()
    keys = launch_keys(launches, capture.trace)
    region = measured_launches(ncu_text())[NCU_ROWS - REGION_LAUNCHES:]
    measured = add_counters(data, keys, join_measurements(keys, region, None), {"ncu_version": "2025.3.1"})
    with_l1 = Ceilings.from_dict(H200.to_dict())
    with_l1.details["level_estimates"] = {"l1": {"value": 33.4e12, "source": "estimate", "note": "test"}}
    return data, ProfileData(measured.kernels, with_l1, measured.metadata, measured.summary)


def _offsets(fig, gid):
    return np.concatenate([c.get_offsets() for c in fig.axes[0].collections if c.get_gid() == gid])


def test_one_point_per_level_at_its_measured_intensity(profiles):
    _, data = profiles
    fig = plot_levels(data, top=5)
    k = data.kernels
    placed = k[(k["measured_launches"] > 0) & (k["measured_flops"] > 0)]
    for level, column in (("dram", "dram_bytes"), ("l2", "l2_bytes"), ("l1", "l1_bytes")):
        expected = placed[placed[column] > 0]
        got = _offsets(fig, f"points:{level}")
        assert len(got) == len(expected)
        want = np.column_stack([expected["measured_flops"] / expected[column],
                                expected["measured_flops"] / expected["time_s"]])
        assert np.allclose(np.sort(got, axis=0), np.sort(want, axis=0))
    roofs = {line.get_gid() for line in fig.axes[0].lines if (line.get_gid() or "").startswith("roof:")}
    assert {"roof:dram", "roof:l2", "roof:l1", "roof:tensor.bf16", "roof:simt.fp32"} <= roofs
    labels = [t.get_text() for t in fig.axes[0].texts]
    assert any("L1 33 TB/s (estimate)" in t for t in labels)  # an estimate says it is one


def test_notes_say_what_is_not_on_the_chart(profiles):
    _, data = profiles
    texts = [t.get_text() for t in plot_levels(data).texts]
    assert any(t.startswith("No counters") for t in texts)
    assert any(t.startswith("Executed no floating-point") for t in texts)


def test_profile_without_counters_is_refused(profiles, tmp_path):
    plain, data = profiles
    with pytest.raises(UsageError, match="--counters ncu"):
        plot_levels(plain)
    path = tmp_path / "plain.json"
    save_profile(plain, path)
    result = CliRunner().invoke(main, ["plot", str(path), "--levels", "-o", str(tmp_path / "x.png")])
    assert result.exit_code == 2 and "holds no counters" in result.output
    good = tmp_path / "c.json"
    save_profile(data, good)
    result = CliRunner().invoke(main, ["plot", str(good), "--levels", "-o", str(tmp_path / "levels.png")])
    assert result.exit_code == 0 and (tmp_path / "levels.png").stat().st_size > 10_000
