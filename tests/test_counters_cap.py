"""--ncu-launch-count against setup launches: ncu stops after N launches in launch order, and the
setup launches that share the plan's invocation numbers come first. On the recorded MLP run with
its warm-up marked as setup (33 setup launches, then the 43 of the steady step), the plan selects
48 launches of which the first 16 are setup: a cap of 5 would measure only setup, so it is refused
before ncu runs; a cap of 20 is noted (ResNet-50 on the H200, 2026-12-02: 120 of 120 were setup)."""

from __future__ import annotations

import pytest
from counters_data import recorded_profile
from test_counters_run import MLP, fake_ncu  # noqa: F401 - the fixture

from rooflinectl.errors import EXIT_COUNTERS, CountersProblem
from rooflinectl.profiling_counters import CounterOptions, collect_counters, counters_phase


@pytest.fixture(scope="module")
def marked():
    return recorded_profile(steps_marked=True)


def _collect(marked, **options):
    capture, data, launches = marked
    said: list[str] = []
    return collect_counters(data, launches, capture, MLP, CounterOptions("ncu", **options), said.append), said


def test_a_cap_that_leaves_only_setup_launches_is_refused_before_ncu_runs(fake_ncu, marked):  # noqa: F811
    with pytest.raises(CountersProblem) as caught:
        _collect(marked, launch_count=5)
    message = str(caught.value)
    assert "--ncu-launch-count 5" in message and "all of them are setup" in message
    assert "--ncu-launch-count 48" in message  # the plan's full count: 16 setup, then the 32 it wants
    assert caught.value.exit_code == EXIT_COUNTERS
    assert not (fake_ncu / "ncu-args.txt").exists()  # ncu never ran


def test_the_profile_is_kept_and_says_why(fake_ncu, marked):  # noqa: F811
    capture, data, launches = marked
    kept, problem = counters_phase(data, launches, capture, MLP, CounterOptions("ncu", launch_count=5), completed=True)
    assert isinstance(problem, CountersProblem)
    assert kept.summary["counters"]["status"] == "failed" and "setup" in kept.summary["counters"]["reason"]
    assert len(kept.kernels) == len(data.kernels)


def test_a_cap_that_cuts_the_plan_is_noted(fake_ncu, marked, monkeypatch):  # noqa: F811
    result, _ = _collect(marked, launch_count=20)
    notes = result.summary["counters"]["notes"]
    assert any("cuts the plan's 48 launches to the first 20 (4 of them in the steady state)" in n for n in notes), notes
    assert not any("warm run's plan" in n for n in notes), notes  # the warm run's cap is 4 x 20
    args = (fake_ncu / "ncu-args.txt.warm").read_text().splitlines()
    assert args[args.index("--launch-count") + 1] == "80"
    monkeypatch.setattr("rooflinectl.profiling_counters.WARM_LAUNCH_FACTOR", 1)
    result, _ = _collect(marked, launch_count=20)
    notes = result.summary["counters"]["notes"]
    assert any("cuts the warm run's plan (one launch per row) to its first 20 launches" in n for n in notes), notes
    whole, _ = _collect(marked)  # the default cap (1000) holds the plan: no note
    assert not any("cuts the" in n for n in whole.summary["counters"]["notes"])
