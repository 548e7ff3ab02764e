"""The pytest plugin (entry point `pytest11`: installing rooflinectl is enough): the `roofline`
fixture, the `roofline(device=...)` marker, the session's roofline table, --roofline-report,
JUnit properties and baselines (--roofline-save / --roofline-compare). docs/pytest-plugin.md.

    def test_softmax_is_at_the_roof(roofline):
        r = roofline(softmax_fused, x, warmup=3, iters=10)
        assert r.bound == "memory" and r.efficiency >= 0.8

Start-up stays light: this module imports the standard library and pytest only; torch, pandas
and the profiler are imported by the fixture when a test first calls it. Nothing here acts on a
session whose tests do not use the fixture or the marker.
"""

from __future__ import annotations

import argparse
import datetime as dt
import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from rooflinectl._version import __version__
from rooflinectl.pytest_plugin import records
from rooflinectl.pytest_plugin.report import terminal_lines, write_report
from rooflinectl.schema import TOOL_NAME

DEVICES = ("auto", "cuda", "cpu")
CEILING_MODES = ("measure", "cached", "spec")
MARKER = ("roofline(device='auto'): a roofline test held to this device's roofs ('cuda', 'cpu' or 'auto'); "
          "skipped with a reason where the device is missing")


@dataclass
class SessionState:
    """What the plugin keeps for one pytest session (config.stash: an in-process pytester run has its own)."""

    ceilings_mode: str
    threshold: float | None = None
    baseline: dict[str, list[dict[str, Any]]] | None = None
    baseline_path: Path | None = None
    save_path: Path | None = None
    report_path: Path | None = None
    ceilings: dict[str, Any] = field(default_factory=dict)  # device kind -> Ceilings, measured once
    outcomes: dict[str, str] = field(default_factory=dict)
    rows: list[dict[str, Any]] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)  # for the terminal summary


STATE = pytest.StashKey[SessionState]()
HOOKS_NAME = "rooflinectl-session"
REGRESSIONS = pytest.StashKey[list[str]]()


def _threshold(text: str) -> float:
    try:
        return records.parse_threshold(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rooflinectl", "roofline assertions (rooflinectl's roofline fixture)")
    group.addoption("--roofline-report", metavar="FILE", default=None,
                    help="write every roofline measurement of the session to FILE: JSON, or markdown when FILE "
                         "ends in .md (a CI step summary)")
    group.addoption("--roofline-save", metavar="NAME", default=None,
                    help="store the session's figures as baseline NAME (.rooflinectl/baselines/NAME.json under the "
                         "rootdir, or a path ending in .json); tests that did not run keep their entries")
    group.addoption("--roofline-compare", metavar="NAME", default=None,
                    help="compare each roofline measurement with baseline NAME (shown in the summary)")
    group.addoption("--roofline-fail-on-regression", metavar="PERCENT", default=None, type=_threshold,
                    help="with --roofline-compare: fail a test whose efficiency fell, or whose kernel time rose, "
                         "by more than PERCENT (e.g. 5%%)")
    group.addoption("--roofline-ceilings", choices=CEILING_MODES, default="measure",
                    help="roofs: measure (default: measured once per machine and cached, as `rooflinectl ceilings "
                         "--measure`), cached (measured ones when cached, else spec; never measures), spec")


def _paths(config: pytest.Config, state: SessionState) -> None:
    """Resolve and check the option paths before any test runs (bad ones: one sentence, exit 4)."""
    opt = config.option
    root = Path(str(config.rootpath))
    try:
        if opt.roofline_save:
            state.save_path = records.baseline_path(opt.roofline_save, root)
        if opt.roofline_compare:
            state.baseline_path = records.baseline_path(opt.roofline_compare, root)
            state.baseline = records.load_baseline(state.baseline_path)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    if opt.roofline_fail_on_regression is not None and not opt.roofline_compare:
        raise pytest.UsageError("--roofline-fail-on-regression needs --roofline-compare NAME: the baseline to "
                                "compare with")
    if opt.roofline_report:
        state.report_path = Path(opt.roofline_report)
        if not state.report_path.absolute().parent.is_dir():
            raise pytest.UsageError(f"--roofline-report: the folder {state.report_path.absolute().parent} does not exist")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)
    state = SessionState(ceilings_mode=config.getoption("roofline_ceilings"),
                         threshold=config.getoption("roofline_fail_on_regression"))
    _paths(config, state)
    config.stash[STATE] = state
    config.pluginmanager.register(SessionHooks(config, state), HOOKS_NAME)


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")  # a pytest-xdist worker: the controller reports


def resolve_device(device: Any) -> str:
    """'cuda' or 'cpu' for a marker's or a call's device; skips the test where CUDA is missing."""
    if device not in DEVICES:
        raise ValueError(f"roofline device {device!r}: use one of {', '.join(DEVICES)}")
    # the CLI's rule, imported here so that loading the plugin imports no torch
    from rooflinectl.ceilings import resolve_device_kind
    from rooflinectl.errors import EnvironmentProblem

    try:
        return resolve_device_kind(device)
    except EnvironmentProblem:  # the CLI's error is a test's skip
        pytest.skip("roofline(device='cuda'): no CUDA GPU here (torch.cuda.is_available() is False)")


def _marker_device(item: pytest.Item) -> str:
    marker = item.get_closest_marker("roofline")
    if marker is None:
        return "auto"
    return marker.kwargs.get("device", marker.args[0] if marker.args else "auto")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test marked roofline(device='cuda') skips, with the reason, before its fixtures make CUDA tensors."""
    if item.get_closest_marker("roofline") is not None:
        device = _marker_device(item)
        if device not in DEVICES:
            pytest.fail(f"@pytest.mark.roofline(device={device!r}): use one of {', '.join(DEVICES)}", pytrace=False)
        resolve_device(device)


def session_ceilings(state: SessionState, kind: str) -> Any:
    """The roofs of a device kind, found once per session (measured under the lock, or from the cache)."""
    if kind not in state.ceilings:
        from rooflinectl.ceilings import current_ceilings, measure_ceilings
        from rooflinectl.pytest_plugin.lock import measurement_lock

        if state.ceilings_mode == "measure":
            with measurement_lock(kind):
                state.ceilings[kind] = measure_ceilings(kind)
        else:
            state.ceilings[kind] = current_ceilings(kind, use_measured=state.ceilings_mode == "cached")
    return state.ceilings[kind]


def _compare(state: SessionState, item: pytest.Item, record: dict[str, Any], call: int) -> None:
    """Fill the record's change against the baseline; a regression beyond the threshold is kept on
    the item and fails its call phase (pytest_runtest_makereport)."""
    saved_calls = (state.baseline or {}).get(item.nodeid) or []
    saved = saved_calls[call - 1] if call <= len(saved_calls) else None
    record["change"] = records.change(record, saved) if saved else ("new" if state.baseline is not None else "")
    found = records.regressions(record, saved, state.threshold) if state.threshold is not None else []
    record["regressions"] = "; ".join(found)
    if found:
        item.stash.setdefault(REGRESSIONS, []).extend(
            f"roofline regression in {record['label']} (call {call}) against {state.baseline_path}: {text}"
            for text in found)


def _name_of(fn: Callable[..., Any]) -> str:
    """A function's qualified name (Class.method); a builtin's plain name (torch.add, not
    _VariableFunctionsClass.add); a callable object's class."""
    if inspect.isbuiltin(fn) or inspect.ismethoddescriptor(fn):
        return str(getattr(fn, "__name__", type(fn).__name__))
    return str(getattr(fn, "__qualname__", None) or type(fn).__name__)


@pytest.fixture
def roofline(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """roofline(fn, *args, warmup=3, iters=10, device=None, label=None, **kwargs) profiles fn(*args,
    **kwargs) and returns its figures (rooflinectl.pytest_plugin.result.RooflineResult)."""
    state = request.config.stash[STATE]
    item = request.node
    calls: list[Any] = []

    def run(fn: Callable[..., Any], *args: Any, warmup: int = 3, iters: int = 10, device: str | None = None,
            label: str | None = None, **kwargs: Any) -> Any:
        if not callable(fn):
            raise TypeError(f"roofline(fn, ...): fn must be callable, got {type(fn).__name__}")
        if int(iters) < 1 or int(warmup) < 0:
            raise ValueError(f"roofline(...): iters must be at least 1 and warmup at least 0 (got {iters}, {warmup})")
        kind = resolve_device(device or _marker_device(item))
        from rooflinectl.pytest_plugin.lock import measurement_lock
        from rooflinectl.pytest_plugin.result import measure

        ceilings = session_ceilings(state, kind)
        name = label or _name_of(fn)
        with measurement_lock(kind):
            result = measure(fn, args, kwargs, warmup=int(warmup), iters=int(iters), device_kind=kind,
                             ceilings=ceilings, label=str(name))
        calls.append(result)
        record = result.record()
        _compare(state, item, record, len(calls))
        item.user_properties.extend(records.properties(record, len(calls)))
        return result

    return run


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """A passing test whose roofline figures regressed beyond --roofline-fail-on-regression fails."""
    outcome = yield
    found = item.stash.get(REGRESSIONS, [])
    if call.when != "call" or not found:
        return
    report = outcome.get_result()
    if report.passed:
        report.outcome = "failed"
        report.longrepr = "\n".join(found)
    else:
        report.sections.append(("roofline regression", "\n".join(found)))


def _meta(state: SessionState) -> dict[str, Any]:
    torch = sys.modules.get("torch")
    return {"tool": TOOL_NAME, "tool_version": __version__, "ceilings_mode": state.ceilings_mode,
            "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "torch": getattr(torch, "__version__", None), "python": sys.version.split()[0]}


def _write_outputs(state: SessionState) -> None:
    """The report and the baseline, each written atomically; a failure is said, never a traceback."""
    measured = [r for r in state.rows if r.get("outcome") != "skipped"]
    if state.report_path is not None:
        try:
            write_report(state.report_path, state.rows, _meta(state))
            state.messages.append(f"roofline report: {state.report_path}")
        except OSError as exc:
            state.messages.append(f"could not write the roofline report {state.report_path}: {exc}")
    if state.save_path is not None and measured:
        try:
            count = records.save_baseline(state.save_path, measured, _meta(state))
            state.messages.append(f"roofline baseline saved: {state.save_path} ({count} tests)")
        except OSError as exc:
            state.messages.append(f"could not save the roofline baseline {state.save_path}: {exc}")


class SessionHooks:
    """The hooks that gather and write one session's rows: registered per config, so a pytester
    session nested in this process keeps its own (hooks like pytest_runtest_logreport get no config)."""

    def __init__(self, config: pytest.Config, state: SessionState) -> None:
        self.config, self.state = config, state

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Gather the rows (here, or from xdist workers' reports: the figures travel as user properties)."""
        state = self.state
        if report.when == "call" or (report.when == "setup" and not report.passed):
            state.outcomes[report.nodeid] = report.outcome
        if report.when == "setup" and report.skipped and "roofline" in report.keywords:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
            state.rows.append({"test": report.nodeid, "call": 1, "outcome": "skipped",
                               "reason": str(reason).removeprefix("Skipped: ")})
        if report.when == "teardown":
            for n, record in enumerate(records.from_properties(report.user_properties), start=1):
                state.rows.append({"test": report.nodeid, "call": n,
                                   "outcome": state.outcomes.get(report.nodeid, "passed"), **record})

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if not _is_worker(self.config):
            _write_outputs(self.state)

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
        state = self.state
        if _is_worker(config) or not (state.rows or state.messages):
            return
        measured = [r for r in state.rows if r.get("outcome") != "skipped"]
        if measured:
            terminalreporter.write_sep("-", "roofline")
            for line in terminal_lines(state.rows):
                terminalreporter.write_line(line)
        elif state.rows:  # a CPU-only run of GPU roofline tests: one line, not a table of dashes
            terminalreporter.write_line(f"roofline: {len(state.rows)} tests skipped, none measured "
                                        f"({state.rows[0].get('reason', '')})")
        for message in state.messages:
            terminalreporter.write_line(message)


def pytest_unconfigure(config: pytest.Config) -> None:
    hooks = config.pluginmanager.get_plugin(HOOKS_NAME)
    if hooks is not None:
        config.pluginmanager.unregister(hooks)
