"""The counters phase of a profile (`rooflinectl profile --counters ncu|auto`, and
`rooflinectl.profile(..., counters=...)`: one path, profiling.ProfilePipeline.add_counters): run
the program again under Nsight Compute, sample one launch per sampling class (kernel, launch
configuration, op, shapes, dtype), join, and say so through the caller's `say`.

Order: the analytic profile is built (and the CLI writes it) first, so it is never lost; the
counters run plans from its counted launches (capture/ncu/sampling.py), runs ncu over
capture/ncu/child.py, joins what ncu measured to those launches (attribution/counters.py) and
adds the counter columns (pipeline.add_counters). It sits beside profiling.py, above the stages
it joins: capture/ncu runs ncu and reads its output, and knows nothing of profiles.
"""

from __future__ import annotations

import dataclasses
import itertools
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

import rooflinectl
from rooflinectl.attribution.counters import join_measurements, launch_keys
from rooflinectl.capture.ncu.command import (
    CounterRunSpec,
    NcuInfo,
    find_ncu,
    ncu_command,
    probe,
    query_metrics,
)
from rooflinectl.capture.ncu.metrics import metrics_to_request
from rooflinectl.capture.ncu.run import run_ncu
from rooflinectl.capture.ncu.sampling import (
    PLAN_RULE,
    LaunchKey,
    kernel_id_filter,
    plan_numbers,
    predict,
    sampling_class,
    warm_class,
)
from rooflinectl.capture.ncu.warm import measure_warm
from rooflinectl.capture.run.session import Capture
from rooflinectl.errors import CountersProblem, EnvironmentProblem, RooflineError
from rooflinectl.pipeline import add_counters
from rooflinectl.profile_model import ProfileData

# The warm run's launches each run once, with two counters (one pass), so its cap is this many times
# --ncu-launch-count: on the H200 (2026-12-02) ResNet-50's warm run measured 1,344 launches in 50 s,
# its cold run 735 in 204 s (0.04 s against 0.28 s a launch); the factor keeps the warm run's time
# within the cold run's at the cap.
WARM_LAUNCH_FACTOR = 4


@dataclass
class CounterOptions:
    mode: str = "none"
    samples: int = 1
    launch_count: int | None = 1000
    launch_skip: int = 0
    timeout_s: float = 900.0
    ncu_path: str | None = None
    report_path: str | None = None
    warm: bool = True  # also measure DRAM bytes with warm caches (capture/ncu/warm.py)


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


@dataclass
class CounterPlan:
    """Which of the profile's launches ncu measures, and with which ncu and metrics."""

    keys: list[LaunchKey]  # every launch ncu will see, setup included (group -1)
    numbers: list[int] | None  # the launches to measure (their numbers among keys); None: every launch
    expected: int  # launches ncu is expected to measure
    warm_numbers: list[int] | None  # the warm run's: one launch of each row's classes (sampling.warm_class)
    warm_expected: int
    info: NcuInfo
    metrics: list[str]
    missing: list[str]  # metrics this ncu or GPU lacks
    notes: list[str] = field(default_factory=list)

    @property
    def setup(self) -> int:
        """Launches outside the counted part (setup, warm-up)."""
        return sum(k.group < 0 for k in self.keys)


def plan_counters(data: ProfileData, launches: pd.DataFrame, capture: Capture,
                  options: CounterOptions) -> CounterPlan:
    """Find ncu and plan what it measures; raises a RooflineError (one sentence) when nothing can be."""
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
    chosen = predict(keys, numbers, PLAN_RULE, options.launch_count)
    _check_cap(keys, chosen, len(predict(keys, numbers, PLAN_RULE)), options.launch_count, notes)
    warm_numbers = None if numbers is None else plan_numbers(keys, eligible, 1, class_of=warm_class)
    warm_chosen = predict(keys, warm_numbers, PLAN_RULE, warm_launch_count(options))
    if options.warm and len(warm_chosen) < len(predict(keys, warm_numbers, PLAN_RULE)):
        notes.append(f"--ncu-launch-count {options.launch_count} (x{WARM_LAUNCH_FACTOR} for the warm run) cuts the "
                     f"warm run's plan (one launch per row) to its first {len(warm_chosen)} launches: later rows "
                     "keep the analytic memory level")
    return CounterPlan(keys, numbers, len(chosen), warm_numbers, len(warm_chosen), info, metrics, missing, notes)


def warm_launch_count(options: CounterOptions) -> int | None:
    """The warm run's cap: WARM_LAUNCH_FACTOR x --ncu-launch-count (None: no cap)."""
    return None if options.launch_count is None else options.launch_count * WARM_LAUNCH_FACTOR


def _check_cap(keys: list[LaunchKey], chosen: list[int], planned: int, launch_count: int | None,
               notes: list[str]) -> None:
    """ncu stops after --ncu-launch-count launches in launch order, and the setup launches (before
    the steady state) that share the plan's invocation numbers come first: a cap that leaves only
    setup launches would run ncu for minutes and measure nothing the table holds (ResNet-50 on the
    H200 at 120: 889 setup launches first). Refused before ncu runs; a cap that cuts the plan is noted."""
    if launch_count is None or len(chosen) >= planned:
        return
    counted = sum(keys[i].group >= 0 for i in chosen)
    if counted == 0:
        raise CountersProblem(f"--ncu-launch-count {launch_count} stops Nsight Compute after the first {len(chosen)} "
                              f"launches the plan selects, and all of them are setup (before the steady state), so "
                              f"no row of the table would get counters: give --ncu-launch-count {planned} (the "
                              "plan's launches) or more.")
    notes.append(f"--ncu-launch-count {launch_count} cuts the plan's {planned} launches to the first {len(chosen)} "
                 f"({counted} of them in the steady state): some sampling classes go unmeasured")


def _announcement(plan: CounterPlan, options: CounterOptions) -> str:
    """What the counters run is about to do, in one line."""
    keys = plan.keys
    classes = len({sampling_class(k) for k in keys if k.group >= 0})
    how = "every launch" if plan.numbers is None else (
        f"{options.samples} per sampling class: same kernel, launch configuration, op, shapes, dtype")
    return (f"counters: running the program again under Nsight Compute {plan.info.version} to measure {plan.expected} "
            f"of {len(keys)} launches ({how}; {classes} classes over {len({k.group for k in keys if k.group >= 0})} "
            "groups" + (f"; {plan.setup} of the {len(keys)} are setup, outside the steady state" if plan.setup else "")
            + "); Nsight Compute replays each one")


def _counted_part(data: ProfileData, target: Target, regions: bool, setup: int) -> str:
    """Which part of the program the counters cover, in words (summary["counters"]["counted_part"])."""
    if regions:
        return "rooflinectl.region blocks"
    if target.function is not None:
        return f"{target.iters} calls after {target.warmup} warm-up calls"
    return "the whole script" + (f" (the table keeps its steady state, {data.summary.get('iterations_method')})"
                                 if setup else "")


def collect_counters(data: ProfileData, launches: pd.DataFrame, capture: Capture, target: Target,
                     options: CounterOptions, say: Callable[[str], None],
                     progress: Callable[[int, int, str], None] | None = None) -> ProfileData:
    """The profile with counters; raises a RooflineError (one sentence) when they cannot be had."""
    plan = plan_counters(data, launches, capture, options)
    work = Path(tempfile.mkdtemp(prefix="rooflinectl-ncu-"))
    spec = CounterRunSpec(metrics=plan.metrics, kernel_id=kernel_id_filter(plan.numbers) if plan.numbers else None,
                          launch_count=options.launch_count, log_path=str(work / "ncu.log"),
                          report_path=options.report_path)
    status = work / "status.json"
    regions = bool(data.summary.get("regions"))
    command, command_notes = ncu_command(plan.info, spec, target.child_args(status, regions))
    (work / "command.txt").write_text(" ".join(command) + "\n", encoding="utf-8")
    say(_announcement(plan, options))
    expected = plan.expected
    run = run_ncu(command, log_path=work / "ncu.log", program_log=work / "program.log", status_path=status,
                  timeout_s=options.timeout_s, env=_child_env(),
                  progress=(lambda done, kernel: progress(done, expected, kernel)) if progress else None)
    join = join_measurements(plan.keys, run.measured, plan.numbers, options.launch_count)
    warm_join, warm_info = None, {"status": "off"}
    if options.warm:  # the caches as the program left them decide the memory level (capture/ncu/warm.py)
        say(f"counters: running it once more with the caches as the program leaves them (DRAM bytes, one pass each, "
            f"{plan.warm_expected} launches: one per row)")
        warm = dataclasses.replace(spec, kernel_id=kernel_id_filter(plan.warm_numbers) if plan.warm_numbers else None,
                                   launch_count=warm_launch_count(options))
        warm_join, warm_info = measure_warm(plan.info, warm, target.child_args(status, regions), work, lambda measured:
                                            join_measurements(plan.keys, measured, plan.warm_numbers, warm.launch_count),
                                            timeout_s=options.timeout_s, env=_child_env())
        warm_info.update(launches_expected=plan.warm_expected, selection=warm.kernel_id or "every launch")
    if warm_info["status"] != "failed":
        shutil.rmtree(work, ignore_errors=True)  # kept on failure: the messages point into it
    summary_info: dict[str, Any] = {
        "tool": "ncu", "ncu_version": plan.info.version, "ncu_path": plan.info.path, "command": command,
        "metrics": plan.metrics, "metrics_missing": plan.missing, "samples": options.samples,
        "launch_count": options.launch_count, "launch_skip": options.launch_skip,
        "launches_expected": expected, "selection": spec.kernel_id or "every launch",
        "cache_control": "all (cold caches)", "clock_control": "none", "wall_s": run.wall_s,
        "ncu_warnings": run.log_tail, "counted_part": _counted_part(data, target, regions, plan.setup),
        "notes": plan.notes + command_notes, "warm": warm_info,
    }
    return add_counters(data, plan.keys, join, summary_info, warm_join)


def failure_record(exc: RooflineError) -> dict[str, Any]:
    return {"status": "failed", "reason": str(exc), "exit_code": exc.exit_code}


def counters_phase(data: ProfileData, launches: pd.DataFrame, capture: Capture, target: Target,
                   options: CounterOptions, *, completed: bool,
                   say: Callable[[str], None] | None = None) -> tuple[ProfileData, RooflineError | None]:
    """Run the counters when asked; never raises: returns the profile (with counters, or with
    summary["counters"] saying why not) and the problem to report, if any. say: where the run's
    progress goes (the CLI's standard error; None: nowhere)."""
    tell = say if say is not None else (lambda _text: None)

    def progress(done: int, expected: int, kernel: str) -> None:
        if done == expected or done % max(1, expected // 10) == 0:
            tell(f"counters: {done}/{expected} launches measured ({kernel[:60]})")

    if not completed:
        data.summary["counters"] = {"status": "skipped", "reason": "the program failed, so it was not run again under ncu"}
        return data, None
    try:
        return collect_counters(data, launches, capture, target, options, tell, progress), None
    except RooflineError as exc:
        problem = exc
    except Exception as exc:  # noqa: BLE001 - a bug here must not lose the analytic profile
        first = str(exc).splitlines()[0][:200] if str(exc) else ""
        problem = CountersProblem(f"The counters phase failed ({type(exc).__name__}: {first}), a rooflinectl bug: "
                                  "please report it; the analytic profile is written.")
    data.summary["counters"] = failure_record(problem)
    return data, problem
