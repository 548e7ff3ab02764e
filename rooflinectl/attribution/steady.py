"""Split a run's launches into the steady state and setup, and time the iterations.

Per-iteration time is device time from one iteration's last kernel end to the next one's (the
first counted iteration: from the last warm-up kernel's end, else from its own first kernel):
what CUDA events recorded around each turn of the loop measure, idle gaps included.
Warm-up: the first iteration found, and each following one more than SLOW_WARMUP slower than
the median of those after it (first calls allocate, pick algorithms, fill caches), at most half
of them; with `--iterations N`, all but the last N. An iteration during which torch.compile
compiled (a recompilation) is setup too, wherever it falls.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from rooflinectl.attribution.iterations import Iterations
from rooflinectl.attribution.spans import span_index
from rooflinectl.attribution.transfers import crosses_link

SLOW_WARMUP = 1.10
MIN_LOOP_SHARE = 0.5  # below it, a marked loop is a minority of the run's work (another phase ran)
MIN_SEQUENCE_SHARE = 0.8  # below it, an unmarked repeated sequence is not taken as the run's loop


@dataclass
class SteadyState:
    """The launches of the counted iterations and of everything else, with the figures the
    summary reports about them."""

    steady: pd.DataFrame
    setup: pd.DataFrame
    window_s: float  # device time of the counted iterations (sum of iteration times)
    iteration_times_s: list[float] = field(default_factory=list)  # one per counted iteration
    host_spans_ns: list[tuple[int, int]] = field(default_factory=list)  # host time of the counted iterations


def _iteration_ends(launches: pd.DataFrame, index: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    starts = np.full(count, np.nan)
    ends = np.full(count, np.nan)
    if count:
        grouped = launches.assign(_it=index)[index >= 0].groupby("_it").agg(a=("start_ns", "min"), b=("end_ns", "max"))
        starts[grouped.index.to_numpy()] = grouped["a"].to_numpy(dtype=float)
        ends[grouped.index.to_numpy()] = grouped["b"].to_numpy(dtype=float)
    return starts, ends


def iteration_times_s(starts: np.ndarray, ends: np.ndarray) -> list[float]:
    """Seconds per iteration: end to end, the first one its own span."""
    if not len(ends):
        return []
    ends = np.asarray(ends, dtype=float)
    return (np.concatenate(([ends[0] - starts[0]], ends[1:] - ends[:-1])) / 1e9).tolist()


def choose_warmup(times_s: list[float], wanted: int | None) -> int:
    """How many of the first iterations are warm-up (see the module docstring)."""
    found = len(times_s)
    if wanted is not None:
        return max(found - wanted, 0)
    warmup = 1
    while warmup < min(found // 2, DIRECT_MEDIANS) and times_s[warmup] > SLOW_WARMUP * float(np.median(times_s[warmup + 1:])):
        warmup += 1
    if warmup < DIRECT_MEDIANS or warmup >= found // 2:
        return warmup
    # A long warm-up (thousands of short iterations): the median of each suffix, all at once
    medians = _suffix_medians(times_s, warmup + 1, found // 2 + 1)
    while warmup < found // 2 and times_s[warmup] > SLOW_WARMUP * medians[warmup + 1]:
        warmup += 1
    return warmup


DIRECT_MEDIANS = 32  # warm-up iterations tested with a median of their own; then _suffix_medians


def _suffix_medians(values: list[float], first: int, last: int) -> dict[int, float]:
    """{i: median of values[i:]} for first <= i < last: one pass from the end, two heaps (the
    lower half as negatives, the upper half), O(n log n) instead of a median per i."""
    lower: list[float] = []
    upper: list[float] = []
    out: dict[int, float] = {}
    for i in range(len(values) - 1, first - 1, -1):
        heapq.heappush(lower, -values[i])
        heapq.heappush(upper, -heapq.heappop(lower))
        if len(upper) > len(lower):
            heapq.heappush(lower, -heapq.heappop(upper))
        if i < last:
            out[i] = -lower[0] if len(lower) > len(upper) else (-lower[0] + upper[0]) / 2
    return out


def split_steady(launches: pd.DataFrame, iterations: Iterations, wanted: int | None = None) -> SteadyState:
    """Set iterations.warmup and split the launches (LAUNCH_COLUMNS) into steady state and setup.

    With no iteration found, every launch is counted (the whole run), setup is empty."""
    if iterations.found == 0 or launches.empty:
        window = int(launches["end_ns"].max() - launches["start_ns"].min()) if len(launches) else 0
        return SteadyState(launches, launches.iloc[0:0], window / 1e9)
    index = span_index(launches["launch_ns"].to_numpy(dtype=np.int64), iterations.spans_ns)
    starts, ends = _iteration_ends(launches, index, iterations.found)
    times = iteration_times_s(starts, ends)
    iterations.warmup = choose_warmup(times, wanted)
    if iterations.compile_spans_ns:
        compiling = [any(a < ce and cs < b for cs, ce in iterations.compile_spans_ns) for a, b in iterations.spans_ns]
        kept = [i for i in range(iterations.warmup, iterations.found) if not compiling[i]]
    else:
        kept = list(range(iterations.warmup, iterations.found))
    counted = index >= iterations.warmup if len(kept) == iterations.found - iterations.warmup else np.isin(index, kept)
    steady_times = [float(times[i]) for i in kept]  # end to end: the warm-up's end starts the first
    return SteadyState(launches[counted], launches[~counted], float(np.nansum(steady_times)),
                       steady_times, [iterations.spans_ns[i] for i in kept])


def setup_figures(setup: pd.DataFrame, iterations: Iterations, window_s: float, run_wall_s: float) -> dict[str, object]:
    """What the setup line says: kernel time and launches outside the steady state, host
    transfers among them, warm-up iterations, compilation (host) and wall time."""
    transfers = setup[crosses_link(setup["kernel"])] if len(setup) else setup
    compile_s = sum(b - a for a, b in iterations.compile_spans_ns) / 1e9
    return {
        "setup_kernel_time_s": float(setup["time_s"].sum()) if len(setup) else 0.0,
        "setup_launches": int(len(setup)),
        "setup_transfer_time_s": float(transfers["time_s"].sum()) if len(transfers) else 0.0,
        "setup_transfer_bytes": float(transfers["bytes"].sum()) if len(transfers) else 0.0,
        "warmup_iterations": iterations.warmup,
        "compile_s": compile_s,
        "run_wall_s": run_wall_s,
        "setup_wall_s": max(run_wall_s - window_s, 0.0),
    }


def loop_share(launches: pd.DataFrame, iterations: Iterations) -> float | None:
    """Share of the run's kernel time outside setup-like work (host transfers, launches while
    torch.compile compiled) that ran inside the iterations found, warm-up included; None when no
    loop was found. Under MIN_LOOP_SHARE, another phase (a second loop) did most of the work; an
    unmarked sequence (kernel_sequence) must hold MIN_SEQUENCE_SHARE: which of two unmarked loops
    holds more kernel time can change from run to run, the whole run does not."""
    if iterations.found == 0 or launches.empty:
        return None
    launch_ns = launches["launch_ns"].to_numpy(dtype=np.int64)
    time_s = launches["time_s"].to_numpy(dtype=float)
    work = ~np.asarray(crosses_link(launches["kernel"]), dtype=bool)
    if iterations.compile_spans_ns:
        work &= span_index(launch_ns, iterations.compile_spans_ns) < 0
    total_s = float(time_s[work].sum())
    if total_s <= 0:
        return None
    inside = span_index(launch_ns, iterations.spans_ns) >= 0
    return float(time_s[work & inside].sum()) / total_s


def minority_loop(share: float | None, method: str) -> bool:
    """Whether the loop found holds too little of the work to stand for the run (loop_share)."""
    bar = MIN_SEQUENCE_SHARE if method == "kernel_sequence" else MIN_LOOP_SHARE
    return share is not None and share < bar
