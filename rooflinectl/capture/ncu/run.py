"""Run the counters command (ncu over the child program) and read what it measured.

The program's own output goes to a log file (it already printed once in the profiled run); ncu's
output goes to its --log-file, which is read while it runs to show progress (one `==PROF==
Profiling "kernel"` line per measured launch). Every way this can fail ends in one sentence
naming the cause and the fix (EnvironmentProblem: exit 3; CountersProblem: exit 4).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rooflinectl.capture.ncu.csv_parse import NcuOutputError, measured_launches
from rooflinectl.capture.ncu.metrics import MeasuredLaunch
from rooflinectl.errors import CountersProblem, EnvironmentProblem, RooflineError

Progress = Callable[[int, str], None]  # (launches measured so far, kernel being measured)
_PROFILING = re.compile(r'==PROF== Profiling "([^"]*)"')
POLL_S = 0.5

PERMISSION = ("No permission to read GPU performance counters (ERR_NVGPUCTRPERM): run as root, or let all users "
              "profile (driver option NVreg_RestrictProfilingToAdminUsers=0; "
              "https://developer.nvidia.com/ERR_NVGPUCTRPERM).")
_UNSUPPORTED = re.compile(r"(device|gpu|architecture)[^\n]{0,40}(is )?not supported|unsupported (device|gpu|architecture)|"
                          r"no (supported|compatible) (device|gpu)", re.IGNORECASE)
_BAD_METRIC = re.compile(r"(failed to find metric|invalid metric|unknown metric)[^\n]*?([a-z0-9_]+__[a-z0-9_.]+)?",
                         re.IGNORECASE)


@dataclass
class NcuRun:
    """What one counters run gave."""

    measured: list[MeasuredLaunch]
    wall_s: float
    command: list[str]
    program_exit_code: int | None
    ncu_exit_code: int
    log_tail: list[str] = field(default_factory=list)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _last_lines(text: str, count: int = 5, prefix: str = "") -> list[str]:
    lines = [ln.rstrip() for ln in text.splitlines() if ln.strip() and ln.startswith(prefix)]
    return lines[-count:]


def classify(ncu_text: str, program_text: str) -> RooflineError | None:
    """The environment problem ncu reported, if any, when it measured nothing: permission,
    unsupported GPU, missing metric."""
    both = ncu_text + "\n" + program_text
    if "ERR_NVGPUCTRPERM" in both:
        return EnvironmentProblem(PERMISSION)
    errors = "\n".join(ln for ln in both.splitlines() if "==ERROR==" in ln or "==WARNING==" in ln)
    if _UNSUPPORTED.search(errors):
        line = next(ln for ln in errors.splitlines() if _UNSUPPORTED.search(ln))
        return EnvironmentProblem(f"Nsight Compute cannot profile this GPU ({line.strip()[:160]}): counters need a "
                                  "GPU this ncu supports; run without --counters, or update Nsight Compute.")
    bad = _BAD_METRIC.search(errors)
    if bad:
        return EnvironmentProblem(f"This GPU or ncu does not offer a metric the counters need ({bad.group(0).strip()[:160]}): "
                                  "update Nsight Compute, or run without --counters.")
    return None


def run_ncu(command: list[str], *, log_path: Path, program_log: Path, status_path: Path, timeout_s: float,
            env: dict[str, str] | None = None, progress: Progress | None = None) -> NcuRun:
    """Run the command; raise a RooflineError naming the cause when no counters come back."""
    for path in (log_path, status_path):
        path.unlink(missing_ok=True)
    start = time.monotonic()
    with open(program_log, "wb") as out:
        try:
            proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    env=env, start_new_session=True)
        except OSError as exc:
            raise EnvironmentProblem(f"Could not start {command[0]} ({exc.strerror or exc}): check the ncu path.") from None
        seen = 0
        timed_out = False
        while proc.poll() is None:
            if time.monotonic() - start > timeout_s:
                timed_out = True
                _kill_group(proc)
                break
            time.sleep(POLL_S)
            if progress is not None:
                found = _PROFILING.findall(_read(log_path))
                if len(found) > seen:
                    seen = len(found)
                    progress(seen, found[-1])
    wall_s = time.monotonic() - start
    ncu_text, program_text = _read(log_path), _read(program_log)
    if "ERR_NVGPUCTRPERM" in ncu_text + program_text:
        raise EnvironmentProblem(PERMISSION)
    if timed_out:
        done = len(_PROFILING.findall(ncu_text))
        raise CountersProblem(f"ncu did not finish within {timeout_s:.0f} s ({done} launches measured): raise "
                              "--ncu-timeout, or measure fewer launches (--ncu-launch-count, --ncu-samples 1, a "
                              "smaller rooflinectl.region).")
    status = _status(status_path)
    code = status.get("exit_code") if status else None
    if code not in (None, 0):
        tail = "; ".join(_last_lines(program_text, 2))
        raise CountersProblem(f"The program failed when run again under ncu (exit code {code}{': ' + tail[:200] if tail else ''}): "
                              "counters need a second run that behaves like the first; fix the failure, "
                              "or profile without --counters.")
    measured = _parse(ncu_text) or _parse(program_text)  # an ncu that prints results on stdout despite --log-file
    if not measured:  # only now do ncu's complaints matter: a warning beside results is not a failure
        problem = classify(ncu_text, program_text)
        if problem is not None:
            raise problem
        said = "; ".join(_last_lines(ncu_text, 3, "==")) or "; ".join(_last_lines(program_text, 3))
        said = f" (it said: {said[:300]})" if said else ""
        if status is None:
            raise CountersProblem(f"ncu exited with code {proc.returncode} before the program finished{said}: "
                                  f"run the command in {log_path.parent / 'command.txt'} by hand to see why.")
        raise CountersProblem(f"ncu measured no kernel in the counted region{said}: the second run launched "
                              "no kernel between the region's start and end; check the program's output in "
                              f"{program_log}.")
    said = [ln for ln in _last_lines(ncu_text, 50, "==") if "==ERROR==" in ln or "==WARNING==" in ln]
    return NcuRun(measured, wall_s, command, code, proc.returncode or 0, said[-5:])


def _parse(text: str) -> list[MeasuredLaunch]:
    try:
        return measured_launches(text)
    except NcuOutputError:
        return []


def _status(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _kill_group(proc: subprocess.Popen) -> None:
    """Stop ncu and the program it runs (their own process group, started by us)."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
    except (ProcessLookupError, PermissionError, subprocess.TimeoutExpired):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
