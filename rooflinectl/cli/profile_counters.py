"""The counters phase of `rooflinectl profile --counters ncu|auto`: run the program again under
Nsight Compute, sample one launch per sampling class (kernel, launch configuration, op, shapes,
dtype), join, and say so.

Order: the analytic profile is built and written first (it is never lost); the counters run
plans from its counted launches (capture/ncu/sampling.py), runs ncu over capture/ncu/child.py,
joins what ncu measured to those launches (attribution/counters.py) and writes the profile
again with the counter columns.
"""

from __future__ import annotations

import itertools
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

import rooflinectl
from rooflinectl.attribution.counters import join_measurements, launch_keys
from rooflinectl.capture.ncu.command import (
    CounterRunSpec,
    find_ncu,
    ncu_command,
    probe,
    query_metrics,
)
from rooflinectl.capture.ncu.metrics import metrics_to_request
from rooflinectl.capture.ncu.run import run_ncu
from rooflinectl.capture.ncu.sampling import (
    PLAN_RULE,
    kernel_id_filter,
    plan_numbers,
    predict,
    sampling_class,
)
from rooflinectl.capture.session import Capture
from rooflinectl.errors import CountersProblem, EnvironmentProblem, RooflineError
from rooflinectl.outputs.validate_render import coverage_text
from rooflinectl.pipeline import add_counters
from rooflinectl.profile_model import ProfileData
from rooflinectl.profile_sections import Summary


@dataclass
class CounterOptions:
    mode: str = "none"
    samples: int = 1
    launch_count: int | None = 1000
    launch_skip: int = 0
    timeout_s: float = 900.0
    ncu_path: str | None = None
    report_path: str | None = None


@dataclass
class Target:
    """What the child runs: a script with its arguments, or FILE.py:FUNCTION with warm-up and iterations."""

    path: Path
    function: str | None = None
    script_args: tuple[str, ...] = ()
    warmup: int = 3
    iters: int = 10

    def child_args(self, status: Path, regions: bool) -> list[str]:
        argv = [sys.executable, "-m", "rooflinectl.capture.ncu.child", "--status", str(status)]
        argv += ["--regions"] if regions else []
        if self.function is None:
            return argv + ["script", str(self.path), "--", *self.script_args]
        return argv + ["function", str(self.path), self.function, "--warmup", str(self.warmup),
                       "--iters", str(self.iters)]


def _child_env() -> dict[str, str]:
    import os

    env = dict(os.environ)
    package_parent = str(Path(rooflinectl.__file__).resolve().parent.parent)  # works from a source checkout too
    env["PYTHONPATH"] = package_parent + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONUNBUFFERED"] = "1"
    return env


def collect_counters(data: ProfileData, launches: pd.DataFrame, capture: Capture, target: Target,
                     options: CounterOptions, say: Callable[[str], None],
                     progress: Callable[[int, int, str], None] | None = None) -> ProfileData:
    """The profile with counters; raises a RooflineError (one sentence) when they cannot be had."""
    if capture.device_kind != "cuda" or capture.trace is None:
        raise EnvironmentProblem("--counters ncu needs a CUDA GPU: this run profiled CPU ops, which Nsight Compute "
                                 "cannot measure; run on a GPU machine or without --counters.")
    keys = launch_keys(launches, capture.trace)  # the whole window ncu sees, setup included (group -1)
    counted = [k.group >= 0 for k in keys]
    if not any(counted):
        raise CountersProblem("The profile counted no GPU kernel launch, so there is nothing for Nsight Compute to "
                              "measure: check that the counted region launches CUDA kernels.")
    info = probe(find_ncu(options.ncu_path))
    metrics, missing = metrics_to_request(query_metrics(info, str(data.metadata.get("device_name", ""))))
    counted_before = itertools.accumulate(counted, initial=0)  # --ncu-launch-skip counts counted launches only
    eligible = [c and before >= options.launch_skip for c, before in zip(counted, counted_before)]
    numbers = plan_numbers(keys, eligible, options.samples)
    if numbers == []:
        raise CountersProblem(f"--ncu-launch-skip {options.launch_skip} skips all {sum(counted)} counted launches, "
                              "so there is nothing left to measure: give a smaller --ncu-launch-skip.")
    notes: list[str] = []
    if numbers is not None and not info.supports("--kernel-id"):
        numbers = None
        notes.append("this ncu has no --kernel-id: every launch is measured (up to --ncu-launch-count)")
    expected = len(predict(keys, numbers, PLAN_RULE, options.launch_count))
    work = Path(tempfile.mkdtemp(prefix="rooflinectl-ncu-"))
    spec = CounterRunSpec(metrics=metrics, kernel_id=kernel_id_filter(numbers) if numbers else None,
                          launch_count=options.launch_count, log_path=str(work / "ncu.log"),
                          report_path=options.report_path)
    status = work / "status.json"
    regions = bool(data.summary.get("regions"))
    command, command_notes = ncu_command(info, spec, target.child_args(status, regions))
    notes += command_notes
    (work / "command.txt").write_text(" ".join(command) + "\n", encoding="utf-8")
    setup = len(keys) - sum(counted)
    classes = len({sampling_class(k) for k in keys if k.group >= 0})
    plan = "every launch" if numbers is None else (
        f"{options.samples} per sampling class: same kernel, launch configuration, op, shapes, dtype")
    say(f"counters: running the program again under Nsight Compute {info.version} to measure {expected} of "
        f"{len(keys)} launches ({plan}; {classes} classes over {len({k.group for k in keys if k.group >= 0})} groups"
        + (f"; {setup} of the {len(keys)} are setup, outside the steady state" if setup else "")
        + "); Nsight Compute replays each one")
    run = run_ncu(command, log_path=work / "ncu.log", program_log=work / "program.log", status_path=status,
                  timeout_s=options.timeout_s, env=_child_env(),
                  progress=(lambda done, kernel: progress(done, expected, kernel)) if progress else None)
    join = join_measurements(keys, run.measured, numbers, options.launch_count)
    shutil.rmtree(work, ignore_errors=True)  # kept on failure: the messages point into it
    summary_info: dict[str, Any] = {
        "tool": "ncu", "ncu_version": info.version, "ncu_path": info.path, "command": command,
        "metrics": metrics, "metrics_missing": missing, "samples": options.samples,
        "launch_count": options.launch_count, "launch_skip": options.launch_skip,
        "launches_expected": expected, "selection": spec.kernel_id or "every launch",
        "cache_control": "all (cold caches)", "clock_control": "none", "wall_s": run.wall_s,
        "ncu_warnings": run.log_tail,
        "counted_part": "rooflinectl.region blocks" if regions else (
            "the whole script" + (f" (the table keeps its steady state, {data.summary.get('iterations_method')})"
                                  if setup else "")
            if target.function is None else f"{target.iters} calls after {target.warmup} warm-up calls"),
        "notes": notes,
    }
    return add_counters(data, keys, join, summary_info)


def counters_line(summary: Summary) -> str:
    """One line on what the counters covered, or why there are none."""
    c = summary.get("counters") or {}
    if c.get("status") != "measured":
        return f"counters: {c.get('status', 'none')}: {c.get('reason', '')}".rstrip(": ")
    share = c.get("time_share_measured")
    text = (f"counters: ncu {c.get('ncu_version', '')} measured {c['launches_measured']} of {c['launches_counted']} "
            f"launches ({coverage_text(c)}" + (f", {100 * share:.1f}% of kernel time" if share is not None else "")
            + f") in {c.get('wall_s', 0):.1f} s")
    return text + "".join(f"; {n}" for n in c.get("notes", []))


def failure_record(exc: RooflineError) -> dict[str, Any]:
    return {"status": "failed", "reason": str(exc), "exit_code": exc.exit_code}


def counters_phase(data: ProfileData, launches: pd.DataFrame, capture: Capture, target: Target,
                   options: CounterOptions, *, completed: bool, quiet: bool) -> tuple[ProfileData, RooflineError | None]:
    """Run the counters when asked; never raises: returns the profile (with counters, or with
    summary["counters"] saying why not) and the problem to report, if any."""
    import click

    def say(text: str) -> None:
        if not quiet:
            click.echo(text, err=True)

    def progress(done: int, expected: int, kernel: str) -> None:
        if not quiet and (done == expected or done % max(1, expected // 10) == 0):
            click.echo(f"counters: {done}/{expected} launches measured ({kernel[:60]})", err=True)

    if not completed:
        data.summary["counters"] = {"status": "skipped", "reason": "the program failed, so it was not run again under ncu"}
        return data, None
    try:
        return collect_counters(data, launches, capture, target, options, say, progress), None
    except RooflineError as exc:
        problem = exc
    except Exception as exc:  # noqa: BLE001 - a bug here must not lose the analytic profile
        first = str(exc).splitlines()[0][:200] if str(exc) else ""
        problem = CountersProblem(f"The counters phase failed ({type(exc).__name__}: {first}), a rooflinectl bug: "
                                  "please report it; the analytic profile is written.")
    data.summary["counters"] = failure_record(problem)
    return data, problem
