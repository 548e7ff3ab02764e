"""Stale ceilings (issue 35): a measurement records the load and clocks it was taken at, repeats
until two rounds agree, says what it did and whether the machine was busy; a profile with rows
above a measured (cached) roof names the cache as a suspect and the command that measures again."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rooflinectl.ceilings import conditions, measure_ceilings
from rooflinectl.ceilings.conditions import busy_reason, measure_until_stable
from rooflinectl.ceilings.measurement import Measurement
from rooflinectl.cli.main import main
from rooflinectl.outputs.profile_file import load_profile
from rooflinectl.outputs.table import summary_text

DATA = Path(__file__).parent / "data"


class Rounds:
    """Fake measurement rounds: round i gives bandwidth values[i] and a latency, taking round_s
    of a fake clock."""

    def __init__(self, values: list[float], round_s: float = 1.0) -> None:
        self.values, self.round_s, self.now, self.calls = values, round_s, 0.0, 0

    def clock(self) -> float:
        return self.now

    def __call__(self, _left_s: float) -> list[Measurement]:
        value = self.values[self.calls]
        self.calls += 1
        self.now += self.round_s
        return [Measurement("dram.copy", value, "bytes/s"), Measurement("launch.op_floor", 1e-6 * self.calls, "s")]


def test_two_rounds_that_agree_are_enough() -> None:
    rounds = Rounds([100.0, 102.0, 50.0])
    kept, stability = measure_until_stable(rounds, 10.0, clock=rounds.clock)
    assert stability == {"rounds": 2, "spread": pytest.approx(2 / 102), "spread_key": "dram.copy", "stable": True}
    assert {m.key: m.value for m in kept} == {"dram.copy": 102.0, "launch.op_floor": 1e-6}  # best rate, least time


def test_rounds_that_disagree_go_on_to_the_limit_and_keep_the_best() -> None:
    rounds = Rounds([60.0, 100.0, 80.0, 100.0])
    kept, stability = measure_until_stable(rounds, 10.0, clock=rounds.clock)
    assert rounds.calls == conditions.MAX_ROUNDS and stability["stable"] is False
    assert stability["spread"] == pytest.approx(0.4)
    assert [m.value for m in kept if m.key == "dram.copy"] == [100.0]


def test_no_second_round_when_the_time_left_does_not_fit_one() -> None:
    rounds = Rounds([60.0, 100.0], round_s=6.0)
    _, stability = measure_until_stable(rounds, 10.0, clock=rounds.clock)
    assert (rounds.calls, stability["rounds"], stability["spread"]) == (1, 1, None)


def test_busy_is_load_over_half_the_cpus_or_a_busy_gpu() -> None:
    assert busy_reason({"load_1min": 1.5, "cpus": 2}) == "load 1.5 on 2 CPU(s)"
    assert busy_reason({"load_1min": 0.9, "cpus": 2}) is None
    assert busy_reason({"load_1min": 0.1, "cpus": 16, "gpu_util_percent": 55}) == "the GPU 55% busy before measuring"


def _fake_cpu_steps(monkeypatch: pytest.MonkeyPatch, load: float) -> None:
    from rooflinectl.ceilings import measure_cpu

    values = iter([10e9, 10.1e9, 10.2e9])
    monkeypatch.setattr(measure_cpu, "cpu_steps", lambda *_a, **_k: [
        ("fake stream", lambda: [Measurement("dram.copy", next(values), "bytes/s", "fake")])])
    monkeypatch.setattr(conditions.os, "getloadavg", lambda: (load, load, load))
    monkeypatch.setattr(conditions.os, "cpu_count", lambda: 4)


def test_measure_records_conditions_in_the_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_cpu_steps(monkeypatch, 0.5)
    ceilings = measure_ceilings("cpu", refresh=True)
    cached = json.loads(Path(ceilings.details["cache"]).read_text())
    assert cached["conditions"] == {"load_1min": 0.5, "cpus": 4}
    assert cached["stability"]["rounds"] == 2 and cached["stability"]["stable"] is True
    assert ceilings.memory_bytes_per_s["dram"].value == 10.1e9  # the better of the two rounds
    from rooflinectl.ceilings import current_ceilings

    again = current_ceilings("cpu")
    assert again.details["measured_conditions"] == {"load_1min": 0.5, "cpus": 4}


def test_ceilings_measure_says_what_it_did(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_cpu_steps(monkeypatch, 3.0)
    runner = CliRunner()
    fresh = runner.invoke(main, ["ceilings", "--measure", "--refresh", "--device", "cpu", "--format", "json"])
    assert fresh.exit_code == 0, fresh.output
    said = fresh.stderr.strip().splitlines()[-1]
    assert said.startswith("rooflinectl: measured at load 3.0 on 4 CPU(s): 2 rounds, figures within 1.0%")
    assert "the machine was busy (load 3.0 on 4 CPU(s))" in said
    assert "`rooflinectl ceilings --measure --refresh`" in said
    json.loads(fresh.stdout)  # stdout stays the JSON document
    cached = runner.invoke(main, ["ceilings", "--measure", "--device", "cpu", "--format", "json"])
    assert "rooflinectl: the cached measurement (" in cached.stderr and "load 3.0 on 4 CPU(s)) is used" in cached.stderr


def test_rows_above_a_measured_roof_name_the_cache() -> None:
    data = load_profile(DATA / "h200_mlp.profile.json")
    assert "may be stale" not in summary_text(data).plain  # nothing above its roof: nothing said
    data.kernels.loc[data.kernels.index[0], "above_roof"] = True
    text = " ".join(summary_text(data).plain.split())
    assert "the measured roofs come from a cached measurement (" in text
    assert "load not recorded) that may be stale: `rooflinectl ceilings --measure --refresh`" in text
    data.ceilings.details["measured_conditions"] = {"load_1min": 7.0, "cpus": 4}
    assert "busy: load 7.0 on 4 CPU(s)" in " ".join(summary_text(data).plain.split())
    for roofs in (data.ceilings.memory_bytes_per_s, data.ceilings.compute_flops_per_s):
        roofs.update({k: dataclasses.replace(r, source="spec") for k, r in roofs.items()})
    assert "may be stale" not in summary_text(data).plain  # no measured roof: not the cache's fault
