"""Join Nsight Compute's measured launches to the profiler's launches, then to kernel-table rows.

Before: every attributed launch of the profiled run (pipeline.build_profile: LAUNCH_COLUMNS plus
"row", the kernel-table row, -1 for setup), the trace (grid, block, shared memory per correlation
id), and the launches ncu measured in a second run of the program, in the order it measured them.
After: per table row, the measured columns of schema.COUNTER_COLUMNS.

Rules:
- Only GPU kernels are measured (ncu does not replay memcpy/memset); the sequence the join works
  on is the kernel launches in launch order (correlation ids increase with launches) of the
  window ncu sees: the regions, the function's calls, else the whole script. Without regions that
  window holds setup too (weight upload, warm-up iterations): ncu numbers and may measure those
  launches like any other, so they stay in the sequence (group -1) and the join maps positions over
  all of them; only the measurements of kernel-table rows (the steady state) are kept.
- The measured launches are matched to launch positions by predicting which invocations ncu
  selected (capture/ncu/sampling.py) under each numbering rule, keeping the first prediction
  that agrees with every measured launch's function name, grid and block (all of it, or a
  prefix when ncu stopped early); if none agrees, each measured launch is aligned in order to
  the next launch with the same function name, grid and block; if that leaves more than a tenth
  of them unmatched, the runs launched different kernels and the join is refused.
- Measurements are shared by sampling class (capture/ncu/sampling.py: kernel, grid, block,
  shared memory, op, shapes, dtype): launches of one class do the same work, so a row's totals
  are, over its launches, the mean of the measured launches of each launch's class, times its
  calls. A row of twelve identical layers gets the counters of the one launch measured in
  another layer: its measured_launches says how many launches its numbers rest on, and
  measured_own_launches how many of those were its own (fewer: shared). On the H200 (GPT-2
  small forward, 2026-11-30, every row measured on its own) the rows of one class agreed within
  0.12% in FLOPs, 2.9% in DRAM bytes and 4.6% in L2 bytes per call.
- The warm run's DRAM bytes are not shared: a row gets the mean of its own measured launches, or
  none (its level stays the analytic guess). With the caches as the program left them a launch's
  DRAM bytes depend on what ran before it, not only on its work: on seven recorded H200 runs
  (tests/data/h200_levels, Llama-style and GPT-2) the rows whose warm figure was shared from
  another row's launches agreed with the analytic level on 53-80% of their time, the rows measured
  only by their own launches on 95-99% (docs/benchmarks/accuracy.md).
"""

from __future__ import annotations

import math
from collections import defaultdict, deque
from dataclasses import dataclass, field

import pandas as pd

from rooflinectl.capture.ncu.metrics import MeasuredLaunch
from rooflinectl.capture.ncu.sampling import (
    NUMBERING_RULES,
    LaunchKey,
    function_name,
    predict,
    sampling_class,
)
from rooflinectl.capture.read.raw import RawTrace
from rooflinectl.errors import CountersProblem

MAX_UNMATCHED_SHARE = 0.1


@dataclass
class CounterJoin:
    pairs: list[tuple[int, MeasuredLaunch]]  # (position in the launch sequence, its measurement)
    rule: str  # the numbering rule whose prediction matched, "every launch", or "aligned"
    unmatched: int = 0  # measured launches that matched no launch
    notes: list[str] = field(default_factory=list)


def launch_keys(launches: pd.DataFrame, trace: RawTrace) -> list[LaunchKey]:
    """The kernel launches (memcpy/memset left out) as LaunchKeys, in launch order; a setup
    launch (row -1) keeps its place in the sequence with group -1. Work: op, shapes and dtype."""
    by_correlation: dict[int, deque] = defaultdict(deque)
    for k in trace.kernels:
        if k.category == "kernel":
            by_correlation[k.correlation].append(k)
    keys: list[tuple[int, LaunchKey]] = []
    for correlation, row, op, shapes, dtype in zip(launches["correlation"], launches["row"], launches["op"],
                                                  launches["shapes"], launches["dtype"]):
        queue = by_correlation.get(int(correlation))
        if not queue:
            continue  # a memcpy/memset, or a CPU op
        k = queue.popleft()
        work = f"{op} | {shapes} | {dtype}"
        keys.append((int(correlation), LaunchKey(k.name, k.grid, k.block, k.shared_memory, int(row), work)))
    keys.sort(key=lambda pair: pair[0])
    return [key for _, key in keys]


def same_launch(key: LaunchKey, measured: MeasuredLaunch) -> bool:
    """The same kernel function with the same grid and block (unknown dimensions are not held against it)."""
    if function_name(key.name) != function_name(measured.name):
        return False
    return all(a is None or b is None or tuple(a) == tuple(b)
               for a, b in ((key.grid, measured.grid), (key.block, measured.block)))


def join_measurements(keys: list[LaunchKey], measured: list[MeasuredLaunch], numbers: list[int] | None,
                      launch_count: int | None = None) -> CounterJoin:
    """Pair each measured launch with its launch position (rules in the module docstring)."""
    if not measured:
        raise CountersProblem("ncu measured no kernel launch: nothing to join.")
    if numbers is None:  # every launch: no numbering to guess
        predictions = {"every launch": predict(keys, None, "config", launch_count)}
    else:
        predictions = {rule: predict(keys, numbers, rule, launch_count) for rule in NUMBERING_RULES}
    for prefix_ok in (False, True):
        for rule, positions in predictions.items():
            if len(positions) < len(measured) or (not prefix_ok and len(positions) != len(measured)):
                continue
            if all(same_launch(keys[p], m) for p, m in zip(positions, measured)):
                notes = [] if len(positions) == len(measured) else [
                    f"ncu stopped after {len(measured)} of the {len(positions)} launches expected"]
                return CounterJoin(list(zip(positions, measured)), rule, 0, notes)
    return _aligned(keys, measured)


def _aligned(keys: list[LaunchKey], measured: list[MeasuredLaunch]) -> CounterJoin:
    pairs: list[tuple[int, MeasuredLaunch]] = []
    position = 0
    unmatched = 0
    for m in measured:
        found = next((p for p in range(position, len(keys)) if same_launch(keys[p], m)), None)
        if found is None:
            unmatched += 1
            continue
        pairs.append((found, m))
        position = found + 1
    if not pairs or unmatched > MAX_UNMATCHED_SHARE * len(measured):
        first = next((m.name for m in measured if not any(same_launch(k, m) for k in keys)), measured[0].name)
        raise CountersProblem(
            f"The {len(measured)} launches ncu measured do not line up with the {len(keys)} kernel launches the "
            f"profiler counted ({unmatched} match none, e.g. {function_name(first)!r}): the program launched other "
            "kernels in its second run (autotuning, random control flow, torch.compile recompiling); make the run "
            "deterministic (fixed seeds, warm-up outside rooflinectl.region) and profile again.")
    notes = [f"ncu's launch selection matched no prediction; {len(pairs)} launches aligned by kernel and launch "
             f"configuration" + (f", {unmatched} left unmatched" if unmatched else "")]
    return CounterJoin(pairs, "aligned", unmatched, notes)


def counters_by_row(keys: list[LaunchKey], join: CounterJoin, calls: pd.Series,
                    warm: CounterJoin | None = None) -> pd.DataFrame:
    """The measured columns per table row (index: row position), for rows with measurements:
    over the row's launches, the mean of each launch's class mean (module docstring), times the
    row's calls. Measured setup launches are left out. warm: the warm-cache run's join
    (capture/ncu/warm.py), whose DRAM bytes become `dram_bytes_warm` the same way."""
    records = {}
    for row, (launch, measured, own) in _row_means(keys, join).items():
        scale = float(calls.iloc[row])
        records[row] = {
            "measured_flops": launch.flops * scale,
            "dram_bytes": launch.dram_bytes * scale,
            "l2_bytes": launch.l2_bytes * scale,
            "l1_bytes": launch.l1_bytes * scale,
            "measured_precision": launch.main_roof,
            "measured_launches": measured,
            "measured_own_launches": own,
        }
    out = pd.DataFrame.from_dict(records, orient="index")
    if warm is not None:
        warm_bytes = {row: launch.dram_bytes * float(calls.iloc[row]) for row, launch in _own_means(keys, warm).items()}
        out["dram_bytes_warm"] = pd.Series(warm_bytes, dtype=float).reindex(out.index)
    return out


def _own_launches(keys: list[LaunchKey], join: CounterJoin) -> dict[int, list[MeasuredLaunch]]:
    """Row -> its own measured launches, for rows with any (setup left out)."""
    own: dict[int, list[MeasuredLaunch]] = defaultdict(list)
    for position, m in join.pairs:
        if keys[position].group >= 0:
            own[keys[position].group].append(m)
    return own


def _own_means(keys: list[LaunchKey], join: CounterJoin) -> dict[int, MeasuredLaunch]:
    """Row -> the mean of its own measured launches. Not shared by class: where a launch's bytes
    come from depends on what ran before it (the forward's weight cast and the backward's gradient
    cast are one class), not only on its work."""
    return {row: _mean_launch(items) for row, items in _own_launches(keys, join).items()}


def _row_means(keys: list[LaunchKey], join: CounterJoin) -> dict[int, tuple[MeasuredLaunch, int, int]]:
    """Row -> (one launch's mean counters over the row's launches, launches measured in its
    classes, launches measured of its own)."""
    by_class: dict = defaultdict(list)
    for position, m in join.pairs:
        if keys[position].group >= 0:
            by_class[sampling_class(keys[position])].append(m)
    own = _own_launches(keys, join)
    class_mean = {cls: _mean_launch(items) for cls, items in by_class.items()}
    row_classes: dict[int, list] = defaultdict(list)  # one entry per launch of the row whose class was measured
    for key in keys:
        cls = sampling_class(key)
        if key.group >= 0 and cls in class_mean:
            row_classes[key.group].append(cls)
    return {row: (_mean_launch([class_mean[cls] for cls in classes]),  # classes repeat: weighted by launches
                  sum(len(by_class[cls]) for cls in set(classes)), len(own.get(row, [])))
            for row, classes in row_classes.items()}


def class_coverage(keys: list[LaunchKey], join: CounterJoin) -> tuple[int, int]:
    """(sampling classes among the counted launches, how many of them have a measured launch)."""
    counted = {sampling_class(k) for k in keys if k.group >= 0}
    measured = {sampling_class(keys[p]) for p, _ in join.pairs if keys[p].group >= 0}
    return len(counted), len(measured)


def _mean_launch(items: list[MeasuredLaunch]) -> MeasuredLaunch:
    """One launch's mean counters (FLOPs per roof, DRAM, L2, L1 bytes); a byte count is unknown
    (NaN) when any launch lacks it."""
    n = len(items)
    by_roof: dict[str, float] = defaultdict(float)
    for m in items:
        for roof, value in m.flops_by_roof.items():
            by_roof[roof] += value / n
    return MeasuredLaunch("", None, None, math.nan, dict(by_roof),
                          dram_bytes=_sum(m.dram_bytes for m in items) / n,
                          l2_bytes=_sum(m.l2_bytes for m in items) / n,
                          l1_bytes=_sum(m.l1_bytes for m in items) / n)


def _sum(values) -> float:
    total = 0.0
    for v in values:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return math.nan
        total += float(v)
    return total
