"""diff's interval from the per-iteration times both profiles hold (analysis/noise.py, issue 35):
calibrated on draws of one distribution, a change inside it is not a regression, and two profiles
of the same script are within the noise while a 2x slower one is flagged."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from rooflinectl.analysis.noise import step_noise, t975
from rooflinectl.cli.main import main


def _summary(times_s: list[float], key: str = "unprofiled_step_times_s") -> dict:
    return {key: list(times_s)}


def test_interval_covers_no_change_about_95_percent_of_the_time() -> None:
    """Draws of one distribution: the interval around the observed change of the means contains 0
    in about 95% of 2,000 pairs (the method's own calibration, by simulation)."""
    rng = np.random.default_rng(0)
    covered = 0
    for _ in range(2000):
        b, n = rng.lognormal(np.log(0.02), 0.2, 6), rng.lognormal(np.log(0.02), 0.2, 6)
        noise = step_noise(_summary(b), _summary(n))
        assert noise.change_pct == pytest.approx(100.0 * (n.mean() / b.mean() - 1.0))
        covered += not noise.significant()
    assert 0.92 <= covered / 2000 <= 0.98


def test_a_real_shift_is_outside_and_the_samples_are_chosen_alike() -> None:
    rng = np.random.default_rng(1)
    b, n = rng.normal(0.010, 0.0005, 10), rng.normal(0.020, 0.001, 10)
    noise = step_noise(_summary(b), _summary(n))
    assert noise.source == "un-profiled steps" and (noise.base_n, noise.new_n) == (10, 10)
    low, high = noise.interval_pct()
    assert 80.0 < low < noise.change_pct < high < 120.0 and noise.slower()
    assert noise.interval_pct(0.0)[0] < 0.0 < noise.interval_pct(0.0)[1]  # a group's: same width, its centre
    # one side without un-profiled steps: both use the profiled iterations
    mixed = step_noise({"unprofiled_step_times_s": [0.01, 0.011], "iteration_times_s": [0.01, 0.012, 0.011]},
                       {"unprofiled_step_times_s": [0.01], "iteration_times_s": [0.02, 0.021]})
    assert mixed.source == "profiled iterations" and (mixed.base_n, mixed.new_n) == (3, 2)
    assert step_noise(_summary([0.01]), _summary([0.01, 0.02])) is None


def test_half_width_matches_a_hand_computed_welch_interval() -> None:
    b, n = [1.0, 1.2, 0.8], [2.0, 2.4, 1.6, 2.0]
    # log-ratio standard error by hand: var/(n mean^2) per side, Welch df, t(0.975)
    vb, vn = 0.04 / (3 * 1.0), (0.32 / 3) / (4 * 4.0)
    df = (vb + vn) ** 2 / (vb**2 / 2 + vn**2 / 3)
    assert step_noise(_summary(b), _summary(n)).half_width_log == pytest.approx(t975(df) * math.sqrt(vb + vn))
    assert t975(4) == pytest.approx(2.776) and t975(1000) == pytest.approx(1.96)


STEPS = """import sys, time, torch
scale = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
model = torch.nn.Linear(16, 16)
x = torch.randn(4, 16)
for delay_ms in [10, 16, 12, 19, 11, 15, 18, 13, 17, 14, 12, 16, 10, 19, 15, 13]:
    model(x)
    time.sleep(delay_ms * scale / 1e3)
"""


def _profile(tmp_path: Path, name: str, *script_args: str) -> Path:
    script = tmp_path / "steps.py"
    script.write_text(STEPS)
    out = tmp_path / f"{name}.json"
    result = CliRunner().invoke(main, ["profile", str(script), "-o", str(out), "-q", "--device", "cpu", "--",
                                       *script_args])
    assert result.exit_code == 0, result.output
    return out


@pytest.mark.slow
def test_same_script_is_within_the_noise_and_twice_as_slow_is_flagged(tmp_path: Path) -> None:
    """Each step sleeps 10-19 ms (a spread a loaded machine cannot hide); the same script profiled
    twice is no regression at 10%, the same steps slept twice as long are."""
    base, again, slow = _profile(tmp_path, "a"), _profile(tmp_path, "b"), _profile(tmp_path, "c", "2")
    runner = CliRunner()
    same = runner.invoke(main, ["diff", str(base), str(again), "--fail-on-regression", "10", "--format", "json"])
    report = json.loads(same.output)
    assert report["noise"]["source"] == "un-profiled steps"
    assert same.exit_code == 0 and report["regressions"] == [], report["regressions"]
    low, high = report["step_interval_pct"]
    assert low < 0 < high
    slower = runner.invoke(main, ["diff", str(base), str(slow), "--fail-on-regression", "10", "--format", "json"])
    assert slower.exit_code == 1, slower.output
    regressions = json.loads(slower.output)["regressions"]
    assert regressions and regressions[0].startswith("total window grew")
    table = runner.invoke(main, ["diff", str(base), str(slow), "--fail-on-regression", "10"], env={"COLUMNS": "1000"})
    assert "regression > 10% outside the noise: total window grew" in table.output


def _report(group_base_s: float, group_new_s: float, steps_b: list[float], steps_n: list[float]):
    from rooflinectl.analysis.diff import DiffReport, GroupChange

    g = GroupChange("aten::mul @ act", "exact", "k", "k", group_base_s, group_new_s, 0.5, 0.5, 1.0, 1.0,
                    "memory", "memory", 1.0)
    noise = step_noise(_summary(steps_b), _summary(steps_n))
    return DiffReport([g], [], [], sum(steps_b) / len(steps_b), sum(steps_n) / len(steps_n), "window",
                      group_base_s, group_new_s, noise=noise), g


def test_a_small_group_inside_the_steps_own_variation_is_not_a_regression() -> None:
    """A 20 ms op that doubles inside a 1 s step varying by about +-40%: said, not failed; the same
    doubling inside a steady step (+-1%) is a regression."""
    noisy = [0.6, 1.4, 0.9, 1.1, 0.7, 1.3]
    report, g = _report(0.020, 0.040, noisy, noisy[::-1])
    assert report.noise.slower(g.delta_pct) and g.delta_s < report.noise.step_noise_s()
    assert not report.group_regressed(g, 5) and report.regressions(5) == []
    assert "the step itself varies by" in report.within_noise(5)[0]
    steady = [1.0, 1.01, 0.99, 1.0, 1.005, 0.995]
    report, g = _report(0.020, 0.040, steady, [v + 0.02 for v in steady])
    assert report.group_regressed(g, 5) and report.regressions(5)[0].startswith("aten::mul @ act grew 100.0%")
