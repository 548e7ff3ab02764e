"""`profile --profile-steps N`: the profiler stops after N iterations and the later ones are timed
without it (capture/run/step_limit.py), on CPU through click's CliRunner.

The scripts sleep a known time in each iteration and leave a numbered annotation after each
optimizer step (or forward): which annotations the saved trace holds says where the profiler
really stopped, and the sleep bounds what an un-profiled step can take."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from rooflinectl.cli.main import main
from rooflinectl.errors import EXIT_USAGE

SLEEP_S = 0.02

TRAINING = f"""
import sys, time, torch
model = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
loss_fn = torch.nn.MSELoss()  # a second top-level module: iterations still follow the optimizer
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(16, 32), torch.randn(16, 4)
for i in range(int(sys.argv[1])):
    loss = loss_fn(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    with torch.profiler.record_function(f"after_step_{{i}}"):
        time.sleep({SLEEP_S})
"""

FORWARD = f"""
import sys, time, torch
model = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.ReLU())
x = torch.randn(16, 32)
with torch.no_grad():
    for i in range(int(sys.argv[1])):
        with torch.profiler.record_function(f"before_call_{{i}}"):
            time.sleep({SLEEP_S})
        model(x)
"""


def _profile(tmp_path: Path, source: str, iterations: int, *options: str):
    script = tmp_path / "script.py"
    script.write_text(source)
    out, trace = tmp_path / "p.json", tmp_path / "trace.json"
    result = CliRunner().invoke(main, ["profile", str(script), "-o", str(out), "--device", "cpu", "--save-trace",
                                       str(trace), *options, "--", str(iterations)])
    return result, out, trace


def _annotations(trace: Path, prefix: str) -> list[int]:
    events = json.loads(trace.read_text())["traceEvents"]
    return sorted(int(e["name"].rsplit("_", 1)[1]) for e in events if str(e.get("name", "")).startswith(prefix))


def test_training_script_stops_after_n_optimizer_steps(tmp_path: Path) -> None:
    result, out, trace = _profile(tmp_path, TRAINING, 10, "--profile-steps", "4")
    assert result.exit_code == 0, result.output
    # step i's annotation follows step i + 1 (0-based): steps 1-4 profiled, so annotations 0-2
    # and not the fourth, which runs after the stop
    assert _annotations(trace, "after_step_") == [0, 1, 2]
    s = json.loads(out.read_text())["summary"]
    assert s["profile_steps_stopped"] is True and s["profile_steps_marker"] == "optimizer_step"
    assert s["profile_steps_marker_name"] == "SGD" and s["profile_steps_seen"] == 10
    assert s["iterations_found"] == 4  # found in the trace afterwards, by its own method
    assert s["unprofiled_steps"] == 10 - 4 - 1  # post-hook to post-hook after the stop
    assert all(SLEEP_S <= t < SLEEP_S + 0.5 for t in s["unprofiled_step_times_s"])
    assert "--profile-steps 4: profiled 4 optimizer steps (SGD)" in result.output
    assert "un-profiled step:" in result.output and "median of 5 timed by wall clock" in result.output


def test_forward_only_script_stops_at_the_next_call(tmp_path: Path) -> None:
    result, out, trace = _profile(tmp_path, FORWARD, 8, "--profile-steps", "3")
    assert result.exit_code == 0, result.output
    # the profiler stops as the fourth forward starts: the sleep before it is still recorded
    assert _annotations(trace, "before_call_") == [0, 1, 2, 3]
    s = json.loads(out.read_text())["summary"]
    assert s["profile_steps_marker"] == "module_forward" and s["profile_steps_marker_name"] == "Sequential"
    assert s["profile_steps_seen"] == 8
    assert s["unprofiled_steps"] == 8 - 3 - 1
    assert all(SLEEP_S <= t < SLEEP_S + 0.5 for t in s["unprofiled_step_times_s"])


def test_run_shorter_than_the_limit_is_profiled_whole(tmp_path: Path) -> None:
    result, out, trace = _profile(tmp_path, TRAINING, 3, "--profile-steps", "5")
    assert result.exit_code == 0, result.output
    assert _annotations(trace, "after_step_") == [0, 1, 2]
    s = json.loads(out.read_text())["summary"]
    assert s["profile_steps_stopped"] is False and s["unprofiled_steps"] == 0
    assert ("the run ended after 3 optimizer steps (SGD), too few to stop after 5; all of it was profiled, "
            "nothing timed without the profiler; idle and launch figures are estimates") in result.output


def test_profile_steps_all_profiles_the_whole_run(tmp_path: Path) -> None:
    result, out, trace = _profile(tmp_path, TRAINING, 7, "--profile-steps", "all")
    assert result.exit_code == 0, result.output
    assert _annotations(trace, "after_step_") == list(range(7))
    assert "profile_steps" not in json.loads(out.read_text())["summary"]


def test_by_default_the_setup_and_five_optimizer_steps_are_profiled(tmp_path: Path) -> None:
    from rooflinectl.capture.run.step_limit import AUTO_STEPS

    result, out, trace = _profile(tmp_path, TRAINING, 10)
    assert result.exit_code == 0, result.output
    assert AUTO_STEPS == 5
    assert _annotations(trace, "after_step_") == [0, 1, 2, 3]  # the fifth step's annotation follows the stop
    s = json.loads(out.read_text())["summary"]
    assert s["profile_steps_rule"] == "auto" and s["profile_steps"] == 5 and s["profile_steps_stopped"] is True
    assert s["unprofiled_steps"] == 10 - 5 - 1
    assert all(SLEEP_S <= t < SLEEP_S + 0.5 for t in s["unprofiled_step_times_s"])
    assert "--profile-steps auto: profiled 5 optimizer steps (SGD), then the run went on" in result.output


def test_by_default_repeated_module_calls_are_sampled_too(tmp_path: Path) -> None:
    result, out, trace = _profile(tmp_path, FORWARD, 9)
    assert result.exit_code == 0, result.output
    assert _annotations(trace, "before_call_") == [0, 1, 2, 3, 4, 5]  # stopped as the sixth call starts
    s = json.loads(out.read_text())["summary"]
    assert s["profile_steps_rule"] == "auto" and s["profile_steps_marker"] == "module_forward"
    assert s["unprofiled_steps"] == 9 - 5 - 1


def test_by_default_a_loop_too_short_to_sample_says_so_in_one_line(tmp_path: Path) -> None:
    result, out, trace = _profile(tmp_path, TRAINING, 4)
    assert result.exit_code == 0, result.output
    assert _annotations(trace, "after_step_") == [0, 1, 2, 3]
    s = json.loads(out.read_text())["summary"]
    assert s["profile_steps_stopped"] is False and s["unprofiled_steps"] == 0
    line = [x for x in result.output.splitlines() if x.startswith("--profile-steps auto")]
    assert line == ["--profile-steps auto: the run ended after 4 optimizer steps (SGD), too few to stop after 5; "
                    "all of it was profiled, nothing timed without the profiler; idle and launch figures are "
                    "estimates"], result.output


@pytest.mark.parametrize(("target", "extra", "words"), [
    ("script.py:main", (), "applies to scripts"),
    ("script.py", ("--counters", "ncu"), "profile without --profile-steps N (auto or all) to add counters"),
])
def test_refused_where_it_cannot_apply(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str,
                                       extra: tuple[str, ...], words: str) -> None:
    (tmp_path / "script.py").write_text("def main():\n    pass\n")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["profile", target, "--device", "cpu", "--profile-steps", "2", *extra])
    assert result.exit_code == EXIT_USAGE
    assert words in result.output
    assert not (tmp_path / "rooflinectl.profile.json").exists()


@pytest.mark.parametrize(("cuda", "user", "during", "after"), [
    ("13.0", None, "1", None),  # set for the session, then taken away
    ("12.6", None, "1", None),
    ("12.4", None, None, None),  # older CUDA: torch keeps teardown off for CUDA graphs there
    ("13.0", "0", "0", "0"),  # the user's choice stands
    (None, None, None, None),  # a CPU-only torch
])
def test_cupti_teardown_is_asked_for_on_cuda_12_6_and_later(monkeypatch: pytest.MonkeyPatch, cuda: str | None,
                                                            user: str | None, during: str | None,
                                                            after: str | None) -> None:
    import os

    import torch

    from rooflinectl.capture.run.session import TEARDOWN_ENV, _cupti_torn_down_after_stop

    monkeypatch.setattr(torch.version, "cuda", cuda)
    monkeypatch.delenv(TEARDOWN_ENV, raising=False)
    if user is not None:
        monkeypatch.setenv(TEARDOWN_ENV, user)
    restore = _cupti_torn_down_after_stop()
    assert os.environ.get(TEARDOWN_ENV) == during
    restore()
    assert os.environ.get(TEARDOWN_ENV) == after


def test_a_failing_stop_never_reaches_the_users_program() -> None:
    import torch

    from rooflinectl.capture.run.step_limit import StepLimit

    def broken() -> None:
        raise RuntimeError("kineto said no")

    limit = StepLimit(1, "cpu", broken)
    optimizer = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
    limit._after_optimizer_step(optimizer, (), {})  # the first step reaches the limit: no exception here
    limit._after_optimizer_step(optimizer, (), {})
    limit._after_optimizer_step(optimizer, (), {})
    meta = limit.metadata()
    assert meta["stop_error"] == "RuntimeError: kineto said no"
    assert meta["stopped"] and len(meta["step_times_s"]) == 1  # the later steps are still timed


def test_idle_without_the_profiler_is_measured_from_the_unprofiled_steps() -> None:
    from rooflinectl.pipeline import unprofiled_idle

    # eager ResNet-50 on the H200 (second call, round 1): 6 steady iterations with 91.5 ms of
    # kernels busy in all (15.25 ms a step), 22.76 ms a step timed after the profiler stopped
    summary = {"iterations": 6, "iterations_method": "optimizer_step", "device_busy_s": 0.0915,
               "device_idle_s": 0.192, "host_events": 40_000, "unprofiled_step_time_s": 0.02276}
    measured = unprofiled_idle(summary, 3e-6)
    assert measured["device_idle_unprofiled_source"] == "measured"
    assert measured["device_idle_unprofiled_s"] == pytest.approx((0.02276 - 0.0915 / 6) * 6)
    calibrated = unprofiled_idle({**summary, "unprofiled_step_time_s": None}, 3e-6)
    assert calibrated == {"device_idle_unprofiled_s": pytest.approx(0.192 - 40_000 * 3e-6),
                          "device_idle_unprofiled_source": "calibration"}
    regions = unprofiled_idle({**summary, "iterations_method": "regions"}, None)  # no steady loop: not comparable
    assert regions == {}


COMPILED = """
import sys, torch
compiles = []

def counting_backend(gm, example_inputs):
    compiles.append(1)
    return gm.forward

model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.GELU(), torch.nn.Linear(16, 16))
compiled = torch.compile(model, backend=counting_backend)
x = torch.randn(4, 16)
with torch.no_grad():
    for _ in range(int(sys.argv[1])):
        compiled(x)
print("COMPILES", len(compiles))
"""


def test_a_compiled_model_is_not_compiled_again_after_the_stop(tmp_path: Path) -> None:
    # a plain run compiles once; turning the module scopes off at the stop must not change a guard
    # Dynamo took while they were on (it recompiled when the global hooks went away, and when the
    # hooks read their on/off flag before asking whether Dynamo traces them)
    result, out, _ = _profile(tmp_path, COMPILED, 8, "--profile-steps", "3")
    assert result.exit_code == 0, result.output
    assert "COMPILES 1" in result.output
    assert json.loads(out.read_text())["summary"]["unprofiled_steps"] == 8 - 3 - 1


def test_events_that_cannot_be_compared_give_no_time_rather_than_a_wrong_one() -> None:
    from rooflinectl.capture.run.step_limit import StepLimit

    class Event:
        def __init__(self, device: int, at_ms: float) -> None:
            self.device, self.at_ms = device, at_ms

        def elapsed_time(self, other: Event) -> float:
            if other.device != self.device:
                raise RuntimeError("events on different devices")
            return other.at_ms - self.at_ms

    limit = StepLimit(1, "cuda", lambda: None)
    limit.events = [(Event(0, 0.0), 0.0), (Event(0, 20.0), 9.0), (Event(1, 41.0), 9.5), (Event(1, 62.0), 10.0)]
    assert limit.step_times_s() == [pytest.approx(0.020), pytest.approx(0.021)]  # the device-0 -> 1 pair is left out


def test_a_run_with_no_live_marker_says_so(tmp_path: Path) -> None:
    # a compiled function (no eager module call, no optimizer): iterations are found afterwards,
    # but none could be counted while the script ran
    source = """
import torch
w = torch.randn(16, 16)
f = torch.compile(lambda x: torch.relu(x @ w), backend="eager")
for _ in range(6):
    f(torch.randn(4, 16))
"""
    result, out, _ = _profile(tmp_path, source, 6, "--profile-steps", "2")
    assert result.exit_code == 0, result.output
    assert "--profile-steps 2: no iteration was seen as the run went" in result.output
    s = json.loads(out.read_text())["summary"]
    assert s["profile_steps_stopped"] is False and s["profile_steps_seen"] == 0
    result, out, _ = _profile(tmp_path, source, 6)  # the default: the same, as an estimate
    assert result.exit_code == 0, result.output
    assert ("--profile-steps auto: no iteration was seen as the run went (no optimizer step, no eager call of an "
            "nn.Module, no call of a torch.compile'd graph): all of the run was profiled; idle and launch figures "
            "are estimates") in " ".join(result.output.split())


@pytest.mark.slow
def test_no_module_hook_is_left_after_the_stop_when_nothing_was_compiled(tmp_path: Path) -> None:
    # a module hook left in place costs every later module call (+25% on a CPU step of 91 module
    # calls, scripts/investigations/post_profiler_cpu.py); a plain run has no global hook at all
    source = """
import sys, torch
from torch.nn.modules import module
model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU())
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(int(sys.argv[1])):
    model(torch.randn(2, 8)).sum().backward()
    opt.step()
print("HOOKS", len(module._global_forward_pre_hooks) + len(module._global_forward_hooks))
"""
    script = tmp_path / "script.py"
    script.write_text(source)
    # its own process: whether Dynamo compiled anything is process-wide, and other tests compile
    done = subprocess.run([sys.executable, "-m", "rooflinectl", "profile", str(script), "-o", str(tmp_path / "p.json"),
                           "-q", "--device", "cpu", "--profile-steps", "2", "--", "6"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "HOOKS 0" in done.stdout


COMPILED_FORWARD = f"""
import sys, time, torch
w = torch.randn(32, 32)
f = torch.compile(lambda x: torch.relu(x @ w))  # Inductor: no eager module call, no optimizer
x = torch.randn(16, 32)
for i in range(int(sys.argv[1])):
    with torch.profiler.record_function(f"before_call_{{i}}"):
        time.sleep({SLEEP_S})
    f(x)
"""


def test_a_loop_over_a_compiled_function_stops_at_the_next_graph_call(tmp_path: Path) -> None:
    # the calls of the compiled graph mark the iterations live (capture/run/compiled_calls.py)
    torch = pytest.importorskip("torch")
    torch._dynamo.reset()
    result, out, trace = _profile(tmp_path, COMPILED_FORWARD, 8, "--profile-steps", "2")
    assert result.exit_code == 0, result.output
    # the profiler stops as the third graph call starts: the sleep before it is still recorded
    assert _annotations(trace, "before_call_") == [0, 1, 2]
    s = json.loads(out.read_text())["summary"]
    assert s["profile_steps_stopped"] is True and s["profile_steps_marker"] == "compiled_graph"
    assert s["profile_steps_marker_name"].startswith("CompiledFxGraph ")
    assert s["profile_steps_seen"] == 8
    assert s["unprofiled_steps"] == 8 - 2 - 1
    assert all(SLEEP_S <= t < SLEEP_S + 0.5 for t in s["unprofiled_step_times_s"])
    assert "--profile-steps 2: profiled 2 calls of the compiled graph (CompiledFxGraph " in result.output
    from torch._inductor.output_code import CompiledFxGraph

    assert "__wrapped__" not in vars(CompiledFxGraph.__call__)  # put back at the end of the session
