"""`profile --profile-steps N` on the GPU: the profiler stops after N optimizer steps, the trace
holds only their kernels, and the later steps are timed with CUDA events."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

# each step: one matmul forward (and two in backward) plus a tell-tale op after the step whose
# count in the trace says how many steps the profiler saw
SCRIPT = """
import torch
model = torch.nn.Linear(1024, 1024, device="cuda")
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(256, 1024, device="cuda")
marker = torch.zeros(7, device="cuda")
for i in range(12):
    model(x).square().mean().backward()
    opt.step()
    opt.zero_grad()
    torch.cumsum(marker, 0)  # one cumsum kernel per step, after its optimizer step
torch.cuda.synchronize()
"""


def _profile_in_own_process(tmp_path: Path, source: str, steps: int | None) -> tuple[list[dict], dict]:
    """`rooflinectl profile --profile-steps STEPS` of the source in its own process, as users run
    it (the first session there detaches CUPTI when it stops): the trace's events and the summary."""
    script = tmp_path / "script.py"
    script.write_text(source)
    out, trace = tmp_path / "p.json", tmp_path / "t.json"
    done = subprocess.run([sys.executable, "-m", "rooflinectl", "profile", str(script), "-o", str(out), "-q",
                           "--device", "cuda", "--save-trace", str(trace),
                           *(["--profile-steps", str(steps)] if steps is not None else [])],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return json.loads(trace.read_text())["traceEvents"], json.loads(out.read_text())["summary"]


def test_profiler_stops_after_n_steps_and_times_the_rest_with_events(tmp_path: Path) -> None:
    events, s = _profile_in_own_process(tmp_path, SCRIPT, 5)
    # the profiler stopped inside step 5's optimizer step: steps 1-4 ran their cumsum under it
    assert sum(e.get("cat") == "cpu_op" and e["name"] == "aten::cumsum" for e in events) == 4
    kernels = [e for e in events if e.get("cat") == "kernel"]
    last_cumsum_op = max(e["ts"] for e in events if e.get("name") == "aten::cumsum")
    assert max(e["ts"] for e in kernels) > last_cumsum_op  # its kernels are in the trace too
    assert s["unprofiled_timed_by"] == "cuda_events" and s["unprofiled_steps"] == 12 - 5 - 1
    assert s["iterations_found"] == 5
    assert all(0 < t < 0.5 for t in s["unprofiled_step_times_s"])


def test_by_default_setup_and_five_steps_are_profiled_and_the_rest_timed_with_events(tmp_path: Path) -> None:
    events, s = _profile_in_own_process(tmp_path, SCRIPT, None)
    # the profiler stopped inside step 5's optimizer step: steps 1-4 ran their cumsum under it
    assert sum(e.get("cat") == "cpu_op" and e["name"] == "aten::cumsum" for e in events) == 4
    assert s["profile_steps_rule"] == "auto" and s["profile_steps"] == 5 and s["profile_steps_stopped"] is True
    assert s["unprofiled_timed_by"] == "cuda_events" and s["unprofiled_steps"] == 12 - 5 - 1
    assert all(0 < t < 0.5 for t in s["unprofiled_step_times_s"])
    assert s["device_idle_unprofiled_source"] == "measured"  # idle from the un-profiled steps


def test_a_session_after_another_in_the_process_keeps_its_kernels(tmp_path: Path) -> None:
    # not the process's first session: no CUPTI teardown is asked for (it took this session's
    # kernels when it was), and the kernels of the profiled steps are all there
    import torch
    from click.testing import CliRunner

    import rooflinectl
    from rooflinectl.cli.main import main

    x = torch.ones(1024, device="cuda")
    rooflinectl.profile(lambda: x.add_(1), warmup=1, iters=2)  # an earlier session in this process
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    out = tmp_path / "p.json"
    result = CliRunner().invoke(main, ["profile", str(script), "-o", str(out), "-q", "--device", "cuda",
                                       "--profile-steps", "5"])
    assert result.exit_code == 0, result.output
    s = json.loads(out.read_text())["summary"]
    assert s["iterations_found"] == 5 and s["launches"] > 0
    assert s["unprofiled_steps"] == 12 - 5 - 1


COMPILED_SCRIPT = """
import torch
w = torch.randn(1024, 1024, device="cuda")
f = torch.compile(lambda x: torch.relu(x @ w).sum(0))  # Inductor on the GPU: Triton kernels
x = torch.randn(256, 1024, device="cuda")
marker = torch.zeros(7, device="cuda")
for i in range(12):
    torch.cumsum(marker, 0)  # one cumsum kernel per iteration, before its graph call
    f(x)
torch.cuda.synchronize()
"""


def test_a_loop_over_a_compiled_function_stops_at_a_graph_call(tmp_path: Path) -> None:
    # no optimizer and no eager module: the first compiled graph's calls mark the iterations
    events, s = _profile_in_own_process(tmp_path, COMPILED_SCRIPT, 4)
    # the profiler stops as the fifth graph call starts: five cumsums ran before it
    assert sum(e.get("cat") == "cpu_op" and e["name"] == "aten::cumsum" for e in events) == 5
    assert s["profile_steps_marker"] == "compiled_graph" and s["profile_steps_stopped"] is True
    assert s["unprofiled_timed_by"] == "cuda_events" and s["unprofiled_steps"] == 12 - 4 - 1
    assert all(0 < t < 0.5 for t in s["unprofiled_step_times_s"])


def test_a_function_is_timed_with_cuda_events_without_the_profiler_too() -> None:
    import torch

    import rooflinectl

    a = torch.randn(2048, 2048, device="cuda")
    p = rooflinectl.profile(lambda: a @ a, warmup=2, iters=6, device="cuda")
    assert p.summary["unprofiled_timed_by"] == "cuda_events" and p.summary["unprofiled_steps"] == 6
    times = p.step_times()
    assert 0 < times["unprofiled_s"] < 0.1 and 0 < times["profiled_s"] < 0.1
    assert p.summary["device_idle_unprofiled_source"] == "measured"
