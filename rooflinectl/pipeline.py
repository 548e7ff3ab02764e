"""From a finished capture to the profile model: capture -> attribution -> analysis.

attribution joins each kernel to the op that launched it and asks costs (a library of FLOP and
byte formulas, keyed by op name: capture knows nothing of it) what that op's call costs, then
groups the launches into kernel rows; analysis places the rows against the ceilings and sums up
the run. Outputs (files, tables, charts, advice reports) come after this module and are never
imported here.
"""

from __future__ import annotations

import dataclasses
from operator import add, attrgetter
from typing import Any

import numpy as np
import pandas as pd

from rooflinectl.analysis.advice.gemm_kernels import is_helper
from rooflinectl.analysis.clocks import clock_summary, device_samples, with_sm_clock
from rooflinectl.analysis.communication import communication_summary
from rooflinectl.analysis.counter_levels import dram_peak_bytes_per_s, level_summary
from rooflinectl.analysis.counters import apply_counters
from rooflinectl.analysis.host_time import host_figures
from rooflinectl.analysis.launch_runs import back_to_back_runs
from rooflinectl.analysis.memory_levels import (
    analytic_levels,
    cache_time_share,
    modelled_dram_bytes,
    with_modelled_dram,
)
from rooflinectl.analysis.roofline import cost_shares, place_on_roofline, summarise
from rooflinectl.attribution.counters import CounterJoin, class_coverage, counters_by_row
from rooflinectl.attribution.group import MAX_SEQUENCE, group_table
from rooflinectl.attribution.iterations import LOOP_METHODS, Iterations, find_iterations
from rooflinectl.attribution.join import LAUNCH_COLUMNS, attribute
from rooflinectl.attribution.records import PER_LAUNCH_COLUMNS
from rooflinectl.attribution.spans import merge_spans, span_index
from rooflinectl.attribution.steady import (
    SteadyState,
    loop_share,
    minority_loop,
    setup_figures,
    split_steady,
)
from rooflinectl.attribution.tensor_accesses import launch_accesses
from rooflinectl.capture.ncu.sampling import LaunchKey
from rooflinectl.capture.progress import report
from rooflinectl.capture.read.chrome_json import gc_paused
from rooflinectl.capture.read.raw import RawTrace
from rooflinectl.capture.run.region import REGION_PREFIX
from rooflinectl.capture.run.session import Capture
from rooflinectl.ceilings import current_ceilings
from rooflinectl.ceilings.model import Ceilings
from rooflinectl.profile_model import ProfileData
from rooflinectl.profile_sections import Counters, RunMetadata, Summary, finished_metadata
from rooflinectl.schema import KERNEL_COLUMNS

MAX_ITERATION_TIMES = 1000  # per-iteration times kept in the summary


def _placed_table(launches: pd.DataFrame, ceilings: Ceilings, rank: int = 0) -> tuple[pd.DataFrame, list[int], pd.Series]:
    """Kernel-table rows (KERNEL_COLUMNS order, by time), the launch sequence as row positions
    (first MAX_SEQUENCE), and every launch's row (index: the launches' index); rank: the process's
    rank in a distributed job (0 otherwise)."""
    table, index = group_table(launches)
    if table.empty:
        table = pd.DataFrame(columns=[c for c in LAUNCH_COLUMNS if c not in PER_LAUNCH_COLUMNS] + ["calls"])
    table["memory_level"] = analytic_levels(launches, index, len(table), ceilings)
    table["dram_bytes_modelled"] = modelled_dram_bytes(launches, index, table["bytes"].to_numpy(dtype=float))
    placed = place_on_roofline(table, ceilings)
    placed["rank"] = rank
    placed = placed[list(KERNEL_COLUMNS)]
    order = placed.sort_values("time_s", ascending=False, kind="stable").index
    remap = {old: new for new, old in enumerate(order)}
    rows = index.map(remap).set_axis(launches.index) if len(launches) else pd.Series([], dtype=int)
    return placed.loc[order].reset_index(drop=True), rows.head(MAX_SEQUENCE).tolist(), rows


def _run_wall_s(trace: RawTrace) -> float:
    """First to last event of the capture (ops and kernels), seconds."""
    firsts, lasts = [], []
    op_starts, op_ends, _ = trace.op_times_ns()
    if len(op_starts):
        firsts.append(int(op_starts.min()))
        lasts.append(int(op_ends.max()))
    if trace.kernels:  # map and attrgetter: no Python frame per kernel (a million on a long run)
        starts = list(map(attrgetter("ts_ns"), trace.kernels))
        firsts.append(min(starts))
        lasts.append(max(map(add, starts, map(attrgetter("dur_ns"), trace.kernels))))
    return (max(lasts) - min(firsts)) / 1e9 if firsts else 0.0


def _counted_host_spans(trace: RawTrace, state: SteadyState, regions: list[str]) -> list[tuple[int, int]]:
    """Host time of the counted work: the steady iterations, the regions, else first to last launch."""
    if state.host_spans_ns:
        return state.host_spans_ns
    if regions:
        return merge_spans([(o.ts_ns, o.end_ns) for o in trace.ops
                            if o.category == "user_annotation" and o.name.startswith(REGION_PREFIX)])
    if state.steady.empty:
        return []
    return [(int(state.steady["launch_ns"].min()), int(state.steady["end_ns"].max()))]


def _steady_state(trace: RawTrace, launches: pd.DataFrame, window_s: float, regions: list[str],
                  known_iterations: int | None, mode: str) -> tuple[SteadyState, Iterations, int | None, dict[str, Any]]:
    """Which launches are counted: regions win, function mode counts all its calls, else the
    steady state of the iterations found (the whole run when none are); and the phase figures
    (attribution/steady.loop_share): a repeated kernel sequence (no mark of the program's) that
    holds less than 80% of the work is not the run's loop, so the whole run is counted (the same
    choice every run, where a second loop could win or lose on timings); a marked loop holding
    under half is kept, and the summary says how much of the work ran outside it."""
    if regions or known_iterations is not None:
        method = "regions" if regions else "function"
        return SteadyState(launches, launches.iloc[0:0], window_s), Iterations(method), known_iterations, {}
    iterations = find_iterations(trace, launches, "none" if mode == "none" else "auto")
    share = loop_share(launches, iterations)
    phases: dict[str, Any] = {} if share is None else {"loop_kernel_share": share}
    if minority_loop(share, iterations.method):
        phases["loop_minority"] = iterations.method
        if iterations.method == "kernel_sequence" and not mode.isdigit():
            iterations = Iterations("none", compile_spans_ns=iterations.compile_spans_ns)
    wanted = int(mode) if mode.isdigit() else None
    state = split_steady(launches, iterations, wanted)
    return state, iterations, len(state.iteration_times_s) or 1, phases


def analyse_trace(trace: RawTrace, device_kind: str, metadata: RunMetadata, ceilings: Ceilings,
                  iterations: int | None = None, iterations_mode: str = "auto",
                  ) -> tuple[pd.DataFrame, Summary, pd.DataFrame]:
    """The kernel table of the counted work (KERNEL_COLUMNS order, by time), the summary, and the
    table of the setup (the launches outside the steady state; empty when all are counted).

    iterations: the known count (function mode), or None to find them (script mode);
    iterations_mode: "auto", "none" (count the whole run) or N (the last N iterations found).
    """
    return _analyse(trace, device_kind, metadata, ceilings, iterations, iterations_mode)[:3]


@gc_paused()  # a long trace makes millions of small objects: collections would cost more than the work
def _analyse(trace: RawTrace, device_kind: str, metadata: RunMetadata, ceilings: Ceilings,
             iterations: int | None, iterations_mode: str,
             ) -> tuple[pd.DataFrame, Summary, pd.DataFrame, pd.DataFrame]:
    """analyse_trace, plus every attributed launch (steady state and setup) in launch order with
    its kernel-table row ("row"; -1 for a setup launch, which is in no row of the table)."""
    report(f"attributing {len(trace.kernels) if device_kind == 'cuda' else len(trace.ops):,} events")
    attributed = attribute(trace, device_kind, metadata)
    report(f"analysing {len(attributed.launches):,} launches")
    samples = device_samples(metadata)
    launches = with_sm_clock(attributed.launches, samples).reset_index(drop=True)  # compute roofs follow the clock sampled
    launches = with_modelled_dram(launches, launch_accesses(trace, launches, device_kind), ceilings)
    state, found, count, phases = _steady_state(trace, launches, attributed.window_s, attributed.regions,
                                                iterations, iterations_mode)
    rank = int(metadata.get("rank") or 0)
    placed, sequence, rows = _placed_table(state.steady, ceilings, rank)
    setup_table, _, _ = _placed_table(state.setup, ceilings, rank)
    summary = summarise(placed, state.steady, state.window_s, sequence, count or 1)
    host_spans_ns = _counted_host_spans(trace, state, attributed.regions)
    summary["back_to_back_runs"] = back_to_back_runs(state.steady, rows, host_spans_ns, is_helper)
    summary["regions"] = attributed.regions
    summary["clocks"] = clock_summary(state.steady, samples, metadata, placed, ceilings)
    summary["region_runs"] = attributed.region_runs
    summary["host_events"] = attributed.host_events
    summary["compile_work_s"] = attributed.compile_work_s
    summary["communication"] = communication_summary(state.steady, count or 1)
    if state.host_spans_ns:
        op_ts = trace.op_times_ns()[0]
        summary["host_events"] = int((span_index(op_ts, state.host_spans_ns) >= 0).sum())
    summary.update({
        "iterations_method": found.method,
        "iterations_marker": found.marker,
        "iterations_found": found.found if found.spans_ns else None,
        "iteration_time_s": float(np.median(state.iteration_times_s)) if state.iteration_times_s else None,
        "iteration_times_s": state.iteration_times_s[:MAX_ITERATION_TIMES],
    })
    summary.update(unprofiled_figures(metadata.get("profile_steps")) or unprofiled_calls(metadata.get("unprofiled_calls")))
    summary.update(setup_figures(state.setup, found, state.window_s, _run_wall_s(trace)))
    summary.update(phases)
    summary.update(host_figures(trace, state.steady, host_spans_ns))
    summary.update(unprofiled_idle(summary, metadata.get("profiler_overhead_per_op_s")))
    row = pd.Series(-1, index=launches.index, dtype=int)
    row.loc[rows.index] = rows.astype(int)
    return placed, summary, setup_table, launches.assign(row=row)


def unprofiled_figures(limit: Any) -> dict[str, Any]:
    """`--profile-steps`: the iterations timed after the profiler stopped (capture/run/step_limit.py)."""
    if not isinstance(limit, dict):
        return {}
    times = [float(t) for t in limit.get("step_times_s") or []]
    return {
        "profile_steps": limit.get("steps"),
        "profile_steps_rule": limit.get("rule", "fixed"),
        "profile_steps_stopped": bool(limit.get("stopped")),
        "profile_steps_marker": limit.get("marker"),
        "profile_steps_marker_name": limit.get("marker_name"),
        "profile_steps_seen": limit.get("iterations_seen"),
        "unprofiled_timed_by": limit.get("timed_by"),
        "unprofiled_steps": len(times),
        "unprofiled_step_time_s": float(np.median(times)) if times else None,
        "unprofiled_step_times_s": times[:MAX_ITERATION_TIMES],
        "unprofiled_tail_s": limit.get("tail_s"),
        **({"profile_steps_error": str(limit["stop_error"])} if limit.get("stop_error") else {}),
    }


def unprofiled_calls(plain: Any) -> dict[str, Any]:
    """Function mode: the calls timed without the profiler before the session (runner.time_calls)."""
    if not isinstance(plain, dict):
        return {}
    times = [float(t) for t in plain.get("call_times_s") or []]
    return {
        "unprofiled_timed_by": plain.get("timed_by"),
        "unprofiled_steps": len(times),
        "unprofiled_step_time_s": float(np.median(times)) if times else None,
        "unprofiled_step_times_s": times[:MAX_ITERATION_TIMES],
    }


def unprofiled_idle(summary: Summary, overhead_per_op_s: float | None) -> dict[str, Any]:
    """The device idle time to expect without the profiler, and where it comes from.

    measured: `--profile-steps` timed the un-profiled steps (the same loop, same boundaries), or
    function mode timed the calls without the profiler, so
    each step's idle is its un-profiled time less the kernels' busy time per steady-state
    iteration (the profiler barely changes kernel durations: "distortion" in docs/benchmarks/compile.md). Else
    calibration: the profiler's cost per recorded event (200 tiny ops timed with and without it)
    times the events of the counted work, taken off the idle time; on eager ResNet-50 on the H200
    it left 19-42 ms of idle per step where the measured figure was 7.5-21 ms."""
    step_s = summary.get("unprofiled_step_time_s")
    iterations = summary.get("iterations") or 0
    if isinstance(step_s, (int, float)) and iterations and summary.get("iterations_method") in (*LOOP_METHODS,
                                                                                                 "function"):
        busy_per_step_s = float(summary.get("device_busy_s") or 0.0) / iterations
        return {"device_idle_unprofiled_s": max(step_s - busy_per_step_s, 0.0) * iterations,
                "device_idle_unprofiled_source": "measured"}
    if overhead_per_op_s is None:
        return {}
    return {"device_idle_unprofiled_s": max(summary["device_idle_s"] - summary["host_events"] * overhead_per_op_s, 0.0),
            "device_idle_unprofiled_source": "calibration"}


def build_profile(capture: Capture, *, command: list[str], completed: bool, exit_code: int | None = None,
                  ceilings: Ceilings | None = None, iterations_mode: str = "auto") -> tuple[ProfileData, pd.DataFrame]:
    """The profile of a finished capture (also of a failed run: what ran is kept), and every
    attributed launch in launch order (attribution's LAUNCH_COLUMNS plus "row", the kernel-table
    row of each, -1 for setup): what the counters tier plans and joins its measurements with.
    Those are the launches the counters run sees (the regions, the function's calls, else the
    whole script), a superset of the counted (steady-state) ones.

    iterations_mode: "auto" (find the loop's iterations when the run has no region and is not
    function mode), "none" (count the whole run), or N (count the last N iterations found)."""
    ceilings = ceilings or current_ceilings(capture.device_kind)
    metadata = finished_metadata(capture.metadata, ceilings, command=command, completed=completed, exit_code=exit_code,
                                 iterations_mode=iterations_mode)
    trace = capture.trace or RawTrace(ops=[], kernels=[], launch_ts_ns={})
    known = metadata.get("iterations")
    table, summary, setup, launches = _analyse(trace, capture.device_kind, metadata, ceilings,
                                               int(known) if known is not None else None, iterations_mode)
    data = ProfileData(kernels=table, ceilings=ceilings, metadata=metadata, summary=summary, setup_kernels=setup)
    return data, launches


def profile_data(capture: Capture, *, command: list[str], completed: bool, exit_code: int | None = None,
                 ceilings: Ceilings | None = None, iterations_mode: str = "auto") -> ProfileData:
    """Build the profile of a finished capture (also of a failed run: what ran is kept); see build_profile."""
    return build_profile(capture, command=command, completed=completed, exit_code=exit_code, ceilings=ceilings,
                         iterations_mode=iterations_mode)[0]


def add_counters(data: ProfileData, keys: list[LaunchKey], join: CounterJoin, info: dict[str, Any],
                 warm: CounterJoin | None = None) -> ProfileData:
    """The profile with Nsight Compute's measurements (joined to launches by attribution.counters)
    in the counter columns, and summary["counters"] saying what was measured and covered (keys:
    the launches of ncu's window; only those of table rows, group >= 0, are counted work). warm:
    the warm-cache run's join (capture/ncu/warm.py): its DRAM bytes decide the memory level."""
    counted = sum(k.group >= 0 for k in keys)
    measured_setup = sum(keys[p].group < 0 for p, _ in join.pairs)
    classes, classes_measured = class_coverage(keys, join)
    table = apply_counters(data.kernels, counters_by_row(keys, join, data.kernels["calls"], warm), data.ceilings)
    summary = dict(data.summary)
    total_s = float(table["time_s"].sum())
    measured = table["measured_launches"] > 0
    if total_s > 0:  # ncu's measurements give costs to rows that had none
        summary.update(cost_shares(table))
    summary["above_roof_rows"] = int(table["above_roof"].sum())
    summary["cache_time_share"] = cache_time_share(table)  # the counters may have moved groups between levels
    counters: Counters = {
        **info,
        "status": "measured",
        "launches_counted": counted,
        "launches_measured": len(join.pairs) - measured_setup,
        "launches_in_window": len(keys),
        "setup_launches_measured": measured_setup,
        "rows_measured": int(measured.sum()),
        "rows_shared": int((measured & (table["measured_own_launches"] == 0)).sum()),  # counters from other rows' launches
        "rows": int(len(table)),
        "classes": classes,
        "classes_measured": classes_measured,
        "time_share_measured": float(table.loc[measured, "time_s"].sum()) / total_s if total_s > 0 else None,
        "numbering_rule": join.rule,
        "unmatched": join.unmatched,
        **level_summary(table, dram_peak_bytes_per_s(data.ceilings)),
        "notes": [*info.get("notes", []), *join.notes] + ([
            f"{measured_setup} measured launches were setup (outside the steady state): left out of the table"]
            if measured_setup else []),
    }
    summary["counters"] = counters
    return dataclasses.replace(data, kernels=table, summary=summary)
