"""The profiling session is an object (capture/run/session.py): its state is its own, the
process's two shared facts are in capture/run/process.py, and a hard exit saves the session of
its own run (runner.HardExitWatch), not one found in a module global."""

from __future__ import annotations

import ast
from pathlib import Path

import torch

import rooflinectl.capture.run as run_package
from rooflinectl.capture.run.process import THIS_PROCESS
from rooflinectl.capture.run.runner import HardExitWatch
from rooflinectl.capture.run.session import Capture, ProfilingSession

RUN = Path(run_package.__file__).parent


def _module_level_containers(source: str) -> list[str]:
    """Names bound at a module's top level to a list, dict or set (a display, a comprehension or
    a call of list/dict/set): mutable state shared by everything that imports the module."""
    found = []
    for node in ast.parse(source).body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        value = getattr(node, "value", None)
        mutable = isinstance(value, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)) or (
            isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in ("list", "dict", "set"))
        found += [ast.unparse(t) for t in targets if mutable]
    return found


def test_session_and_runner_hold_no_module_level_state() -> None:
    for name in ("session.py", "runner.py"):
        assert _module_level_containers((RUN / name).read_text(encoding="utf-8")) == [], name


def test_the_check_sees_module_level_state() -> None:
    source = "A = [0]\nB: dict[str, int] = {}\nC = list()\nD = (1, 2)\nE = 'x'\n"
    assert _module_level_containers(source) == ["A", "B", "C"]


def test_sessions_are_counted_by_the_process_record() -> None:
    before = THIS_PROCESS.sessions_started
    with ProfilingSession("cpu"):
        torch.ones(4).add(1)
    assert THIS_PROCESS.sessions_started == before + 1


def test_a_hard_exit_saves_the_session_of_its_run_finished_first() -> None:
    saved: list[tuple[Capture | None, int, str, bool]] = []
    watch = HardExitWatch(lambda capture, code, what: saved.append(
        (capture, code, what, capture is not None and capture.trace is not None)))
    watch(3, "os._exit(3)")  # before the run named its session: nothing to save
    session = ProfilingSession("cpu")
    watch.session = session
    session.start()
    try:
        torch.ones(8).mul(2)
        watch(143, "SIGTERM")  # recording: finished now, then handed over with its trace
        assert not session.running
        watch(4, "os._exit(4)")  # finished already: nothing recording any more
    finally:
        session.finish()
        session.close()
    assert [(c is session.capture if c else None, code, what, traced) for c, code, what, traced in saved] == [
        (None, 3, "os._exit(3)", False), (True, 143, "SIGTERM", True), (None, 4, "os._exit(4)", False)]
    assert "aten::mul" in {op.name for op in session.capture.trace.ops}
