"""After the default sampling stops the profiler, nothing of ours that costs host time stays
installed: the script itself reads torch's, Python's and Triton's hook registries during a
profiled step and during an un-profiled one, and prints what it found."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = """
import json, sys, threading, torch
from torch.nn.modules import module as nn_module
from torch.optim import optimizer as optim_module

def state(model):
    tool_events = None
    if hasattr(sys, "monitoring"):
        code = torch.nn.Module._call_impl.__code__
        tools = [t for t in range(6) if sys.monitoring.get_tool(t) == "rooflinectl"]
        tool_events = sum(sys.monitoring.get_events(t) | sys.monitoring.get_local_events(t, code) for t in tools)
    try:
        import triton
        triton_hooks = len(triton.knobs.runtime.launch_enter_hook.calls)
    except Exception:
        triton_hooks = 0
    return {
        "profiler_on": bool(torch.autograd.profiler._is_profiler_enabled),
        "monitoring_events": tool_events,
        "global_module_hooks": len(nn_module._global_forward_pre_hooks) + len(nn_module._global_forward_hooks),
        "optimizer_hooks": len(optim_module._global_optimizer_post_hooks),
        "model_pre_hooks": len(model._forward_pre_hooks),
        "triton_hooks": triton_hooks,
        "nvml_threads": sum(t.name == "rooflinectl-nvml" and t.is_alive() for t in threading.enumerate()),
        "torch_function_modes": torch._C._len_torch_function_stack(),
        "import_finders": sum(type(f).__module__.startswith("rooflinectl") for f in sys.meta_path),
    }

model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU())
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i in range(10):
    model(torch.randn(2, 8)).sum().backward()
    opt.step()
    if i in (1, 8):
        print("STATE", i, json.dumps(state(model)))
"""


@pytest.mark.slow
def test_nothing_of_ours_but_the_marker_stays_after_the_stop(tmp_path: Path) -> None:
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    # its own process: global hooks stay (returning at once) where Dynamo compiled anything in the
    # process (capture/run/modules.py), and other tests compile
    done = subprocess.run([sys.executable, "-m", "rooflinectl", "profile", str(script), "-o", str(tmp_path / "p.json"),
                           "--device", "cpu", "-q"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    states = {int(line.split()[1]): json.loads(line.split(" ", 2)[2])
              for line in done.stdout.splitlines() if line.startswith("STATE ")}
    profiled, free = states[1], states[8]
    # while profiled (step 2 of 5): the profiler and our module scopes are on, the top module watched
    assert profiled["profiler_on"] is True
    assert profiled["monitoring_events"] or profiled["global_module_hooks"]
    assert profiled["model_pre_hooks"] == 1 and profiled["optimizer_hooks"] == 1
    assert profiled["triton_hooks"] == (1 if importlib.util.find_spec("triton") is not None else 0)
    assert profiled["torch_function_modes"] == 1  # the source-line mode (capture/source_lines.py)
    # after the stop (step 9 of 10): only the optimizer step hook, the iteration marker, remains
    assert free == {"profiler_on": False, "monitoring_events": 0 if profiled["monitoring_events"] else None,
                    "global_module_hooks": 0, "optimizer_hooks": 1, "model_pre_hooks": 0, "triton_hooks": 0,
                    "nvml_threads": 0, "torch_function_modes": 0, "import_finders": 0}, free
    summary = json.loads((tmp_path / "p.json").read_text())["summary"]
    assert summary["profile_steps_marker"] == "optimizer_step" and summary["unprofiled_steps"] == 10 - 5 - 1


def test_a_session_is_an_object_with_start_stop_finish_and_close() -> None:
    import torch

    from rooflinectl.capture.run import session as session_module
    from rooflinectl.capture.run.session import ProfilingSession

    session = ProfilingSession("cpu")
    assert not session.running
    capture = session.start()
    assert torch.autograd.profiler._is_profiler_enabled and session.running and session.capture is capture
    torch.ones(8).mul(2)
    session.stop()
    assert not torch.autograd.profiler._is_profiler_enabled
    torch.ones(8).add(3)  # after the stop: not recorded
    session.finish()
    assert not session.running and capture.trace is not None
    trace = capture.trace
    session.finish()  # once: a hard exit may have finished it first
    assert capture.trace is trace
    session.close()
    # no module-level state: nothing in the session's module refers to the session or its capture
    held = [name for name, value in vars(session_module).items() if value is session or value is capture
            or (isinstance(value, (list, dict, set)) and any(v is session or v is capture for v in value))]
    assert held == []
    names = {op.name for op in capture.trace.ops}
    assert "aten::mul" in names and "aten::add" not in names


def test_the_step_limit_stop_reports_no_phase_while_the_program_runs_on() -> None:
    """A phase report starts the CLI's live status line (a rich refresh thread, 4 redraws a second)
    on a terminal: reported at the step limit's stop, that thread ran through every un-profiled
    step, drawing "stopping the profiler" over the program's output. Phases reported while the
    program runs on must be none; the end of the session still reports its own."""
    import torch

    from rooflinectl.capture.progress import listening
    from rooflinectl.capture.run.session import ProfilingSession

    phases: list[tuple[int, str]] = []
    step = [0]
    model = torch.nn.Linear(4, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with listening(lambda phase: phases.append((step[0], phase))), ProfilingSession("cpu", profile_steps=2) as session:
        for step[0] in range(1, 6):
            model(torch.ones(2, 4)).sum().backward()
            opt.step()
        assert session.limit is not None and session.limit.stopped
        during = list(phases)
        step[0] = 99  # the end of the run
    assert during == []
    assert (99, "stopping the profiler") not in phases  # stopped already: the end does not stop again
    assert any(phase.startswith("exporting the trace") for at, phase in phases if at == 99)
