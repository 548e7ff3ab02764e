"""Find the iterations of a script's loop from what the program already marks, so the kernel
table can show the steady state and keep setup (weight upload, warm-up, compilation) apart.

The paths, in order of trust (the first that finds two or more iterations wins):
- profiler_step: `ProfilerStep#N` annotations, which a script's own torch.profiler writes at
  each `prof.step()`; each annotation is one iteration.
- optimizer_step: `Optimizer.step#<Class>.step` annotations (every torch.optim optimizer writes
  them); an iteration ends where a step ends, so iteration k runs from the end of step k-1 to
  the end of step k, and the first runs from the first launch to the end of step 1.
- module_forward / compiled_call: repeated calls of the top-level nn.Module (rooflinectl's module
  scopes) or of one compiled graph (`## Call CompiledFxGraph <hash> ##`); an iteration runs from
  one call's start to the next call's start; the last one ends where its launches have repeated
  the previous iteration's, kernel for kernel (else it is left out as incomplete).
- kernel_sequence: no marks at all: the longest stretch of launches made of three or more
  identical, back-to-back repetitions of one launch sequence (kernel name, grid, block, shapes),
  measured in kernel time, host transfers not counted; the phase is the one whose boundaries
  fall in the longest host gaps between launches (a Python loop returns to the interpreter
  between iterations), never inside one call of the top-level module.
Launches made while torch.compile compiles or autotunes never take part in the search.

Limits: iterations must repeat exactly for kernel_sequence (a data-dependent kernel choice
breaks the run); a script that runs one forward of a model with identical layers and nothing
else shows its layers as iterations there (the summary says how iterations were found;
`--iterations none` counts the whole run). Two optimizers stepping in one iteration, with the
same class, give two iterations per loop turn.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from rooflinectl.attribution.spans import merge_spans, span_index
from rooflinectl.attribution.transfers import crosses_link
from rooflinectl.capture.read.raw import RawOp, RawTrace
from rooflinectl.capture.run.region import MODULE_PREFIX

PROFILER_STEP = re.compile(r"^ProfilerStep#\d+$")
OPTIMIZER_STEP = re.compile(r"^Optimizer\.step#.+\.step$")
COMPILED_CALL = re.compile(r"^## Call CompiledFxGraph \S+ ##$")
COMPILE_MARK = re.compile(r"compile_id=(\S+)")
AUTOTUNE_MARK = "CachingAutotuner.benchmark_all_configs"

MIN_ITERATIONS = 2  # fewer found is no loop: the whole run is counted
MIN_SEQUENCE_REPEATS = 3  # unmarked repetitions: two identical layers of one forward are not a loop
CANDIDATE_PERIODS = 48  # most frequent distances between repeats of a launch, tried as periods
MIN_REPEATED_SHARE = 0.25  # a repeated stretch must hold this share of the run's kernel time
LOOP_METHODS = ("profiler_step", "optimizer_step", "module_forward", "compiled_call", "kernel_sequence")  # found a loop
METHODS = ("function", "regions", *LOOP_METHODS, "none", "off")


@dataclass
class Iterations:
    """Iterations found in one run: host-time spans [start, end) in launch order; a launch belongs
    to the iteration whose span holds its launch time (the `launch_ns` of attribution)."""

    method: str  # one of METHODS
    spans_ns: list[tuple[int, int]] = field(default_factory=list)
    warmup: int = 0  # the first `warmup` spans are warm-up: setup, not steady state
    marker: str = ""  # the annotation that marked them, or the first kernel of each repetition
    compile_spans_ns: list[tuple[int, int]] = field(default_factory=list)

    @property
    def found(self) -> int:
        return len(self.spans_ns)


def compile_spans(ops: list[RawOp]) -> list[tuple[int, int]]:
    """Host time torch.compile spent compiling and autotuning: from the first to the last
    `*_data: compile_id=X` mark of each compile, and every compiled-graph call that ran the
    autotuner's benchmarks (Inductor launches each candidate kernel many times there)."""
    by_id: dict[str, list[int]] = defaultdict(list)
    autotune: list[int] = []
    calls: list[RawOp] = []
    for op in ops:
        if op.category != "user_annotation":
            continue
        mark = COMPILE_MARK.search(op.name)
        if mark:
            by_id[mark.group(1)] += [op.ts_ns, op.end_ns]
        if op.name.startswith(AUTOTUNE_MARK):
            autotune.append(op.ts_ns)
        elif COMPILED_CALL.match(op.name):
            calls.append(op)
    spans = [(min(times), max(times)) for times in by_id.values()]
    spans += [(c.ts_ns, c.end_ns) for c in calls if any(c.ts_ns <= t <= c.end_ns for t in autotune)]
    return merge_spans(spans)


def _outermost(ops: list[RawOp]) -> list[RawOp]:
    """Annotations not nested in an earlier one of the list (per thread), in time order."""
    out: list[RawOp] = []
    end_by_tid: dict[int, int] = {}
    for op in sorted(ops, key=lambda o: (o.ts_ns, -o.dur_ns)):
        if op.ts_ns < end_by_tid.get(op.tid, -1):
            continue
        out.append(op)
        end_by_tid[op.tid] = op.end_ns
    return out


def _launch_order(launches: pd.DataFrame) -> pd.DataFrame:
    return launches.sort_values(["launch_ns", "start_ns"], kind="stable").reset_index(drop=True)


def _with_work(spans: list[tuple[int, int]], launch_ns: np.ndarray) -> list[tuple[int, int]]:
    index = span_index(launch_ns, spans)
    counts = np.bincount(index[index >= 0], minlength=len(spans))
    return [s for s, n in zip(spans, counts) if n > 0]


def _profiler_steps(ops: list[RawOp], launch_ns: np.ndarray) -> Iterations | None:
    steps = _outermost([o for o in ops if o.category == "user_annotation" and PROFILER_STEP.match(o.name)])
    spans = _with_work([(o.ts_ns, o.end_ns + 1) for o in steps], launch_ns)
    return Iterations("profiler_step", spans, marker="ProfilerStep#N") if len(spans) >= MIN_ITERATIONS else None


def _optimizer_steps(ops: list[RawOp], launch_ns: np.ndarray) -> Iterations | None:
    steps = [o for o in ops if o.category == "user_annotation" and OPTIMIZER_STEP.match(o.name)]
    if not steps or len(launch_ns) == 0:
        return None
    counts = Counter(o.name for o in steps)
    last_end = {name: max(o.end_ns for o in steps if o.name == name) for name in counts}
    name = max(counts, key=lambda n: (counts[n], last_end[n]))
    ends = [o.end_ns + 1 for o in _outermost([o for o in steps if o.name == name])]
    first = int(launch_ns.min())
    bounds = [min(first, ends[0] - 1)] + ends
    spans = _with_work(list(zip(bounds[:-1], bounds[1:])), launch_ns)
    return Iterations("optimizer_step", spans, marker=name) if len(spans) >= MIN_ITERATIONS else None


def _tokens(launches: pd.DataFrame, excluded: list[tuple[int, int]]) -> np.ndarray:
    """One integer per launch (kernel name, grid, block, shapes); launches in excluded spans
    get a token of their own, so no repetition runs through them."""
    keys = pd.DataFrame({"kernel": launches["kernel"].to_numpy(), "blocks": launches["blocks"].fillna(-1).to_numpy(),
                         "threads": launches["threads_per_block"].fillna(-1).to_numpy(),
                         "shapes": launches["shapes"].to_numpy()})
    tokens = keys.groupby(list(keys.columns), sort=False, dropna=False).ngroup().to_numpy(dtype=np.int64).copy()
    out = span_index(launches["launch_ns"].to_numpy(dtype=np.int64), excluded) >= 0
    tokens[out] = -1 - np.arange(int(out.sum()))
    return tokens


def _repeated_calls(ops: list[RawOp], order: pd.DataFrame, tokens: np.ndarray) -> Iterations | None:
    """Iterations between the starts of repeated calls of the top-level module or a compiled graph."""
    for method, calls in (("module_forward", _root_calls(ops)),
                          ("compiled_call", [o for o in ops if o.category == "user_annotation"
                                             and COMPILED_CALL.match(o.name)])):
        calls = _outermost(calls)
        counts = Counter(o.name for o in calls)
        if not counts or max(counts.values()) < MIN_ITERATIONS:
            continue
        name = max(counts, key=lambda n: (counts[n], -min(o.ts_ns for o in calls if o.name == n)))
        starts = [o.ts_ns for o in calls if o.name == name]
        spans = list(zip(starts[:-1], starts[1:]))
        last = _close_last(order, tokens, spans[-1], starts[-1])
        if last is not None:
            spans.append(last)
        spans = _with_work(spans, order["launch_ns"].to_numpy(dtype=np.int64))
        if len(spans) >= MIN_ITERATIONS:
            return Iterations(method, spans, marker=name.removeprefix(MODULE_PREFIX))
    return None


def _close_last(order: pd.DataFrame, tokens: np.ndarray, previous: tuple[int, int], start_ns: int) -> tuple[int, int] | None:
    """The last call's iteration: it ends where its launches have repeated the previous
    iteration's, launch for launch; None when they do not."""
    launch_ns = order["launch_ns"].to_numpy(dtype=np.int64)
    before = np.flatnonzero((launch_ns >= previous[0]) & (launch_ns < previous[1]))
    first = int(np.searchsorted(launch_ns, start_ns, side="left"))
    count = len(before)
    if count == 0 or first + count > len(tokens):
        return None
    if not np.array_equal(tokens[before], tokens[first:first + count]):
        return None
    return (start_ns, int(launch_ns[first + count - 1]) + 1)


def _runs(tokens: np.ndarray, period: int) -> list[tuple[int, int]]:
    """Maximal stretches [a, b) where tokens repeat with this period (b - a >= 2 periods)."""
    same = np.concatenate(([False], tokens[:-period] == tokens[period:], [False]))
    edges = np.flatnonzero(np.diff(same.astype(np.int8)))
    return [(int(a), int(b) + period) for a, b in zip(edges[::2], edges[1::2]) if b - a >= period]


def _candidate_periods(tokens: np.ndarray) -> list[int]:
    """Distances between consecutive occurrences of a launch, most frequent first."""
    positions = np.flatnonzero(tokens >= 0)
    order = np.argsort(tokens[positions], kind="stable")  # each token's positions, in order
    same = tokens[positions][order][1:] == tokens[positions][order][:-1]
    at = positions[order][1:][same]  # where each gap was seen (at its later launch)
    gaps = at - positions[order][:-1][same]
    if len(gaps) == 0:
        return []
    distinct, which, counts = np.unique(gaps, return_inverse=True, return_counts=True)
    first_seen = np.full(len(distinct), len(tokens), dtype=np.int64)
    np.minimum.at(first_seen, which, at)
    ranked = np.lexsort((first_seen, -counts))  # most frequent first, ties in the order first seen
    return distinct[ranked][:CANDIDATE_PERIODS].tolist()


def _root_calls(ops: list[RawOp]) -> list[RawOp]:
    """Forward calls of top-level modules (rooflinectl's module scopes: a path without a dot)."""
    return [o for o in ops if o.category == "user_annotation" and o.name.startswith(MODULE_PREFIX)
            and "." not in o.name[len(MODULE_PREFIX):]]


def _kernel_sequence(order: pd.DataFrame, tokens: np.ndarray, inside_calls: list[tuple[int, int]]) -> Iterations | None:
    weights = np.where(crosses_link(order["kernel"]), 0.0, order["time_s"].to_numpy(dtype=float))
    cumulative = np.concatenate(([0.0], np.cumsum(weights)))
    best: tuple[float, int, int, int] | None = None  # covered time, -period, start, end
    for period in _candidate_periods(tokens):
        for a, b in _runs(tokens, period):
            covered = cumulative[a + (b - a) // period * period] - cumulative[a]
            if best is None or (covered, -period) > best[:2]:
                best = (covered, -period, a, b)
    if best is None or best[0] < MIN_REPEATED_SHARE * cumulative[-1]:
        return None
    period, a, b = -best[1], best[2], best[3]
    launch_ns = order["launch_ns"].to_numpy(dtype=np.int64)
    phase = _phase(launch_ns, a, b, period, inside_calls)
    if phase is None:
        return None
    first = a + phase
    count = (b - first) // period
    bounds = launch_ns[first + period * np.arange(count)].tolist()
    end = int(launch_ns[first + count * period - 1]) + 1
    spans = list(zip(bounds, bounds[1:] + [end]))
    return Iterations("kernel_sequence", spans, marker=str(order["kernel"].iloc[first])) \
        if len(spans) >= MIN_SEQUENCE_REPEATS else None


def _phase(launch_ns: np.ndarray, a: int, b: int, period: int, inside_calls: list[tuple[int, int]]) -> int | None:
    """Offset of the first iteration in the repeated stretch: the most iterations first, then the
    longest median host gap before an iteration's first launch. A boundary inside one op (two
    launches at one host time) or inside one call of the top-level module is never a boundary."""
    best: tuple[int, float, int] | None = None
    for phase in range(period):
        count = (b - a - phase) // period
        if count < MIN_SEQUENCE_REPEATS:
            break
        firsts = a + phase + period * np.arange(count)
        gaps = launch_ns[firsts] - launch_ns[np.maximum(firsts - 1, 0)]
        gaps[firsts == 0] = np.iinfo(np.int64).max  # the run's first launch: nothing before it
        if (gaps <= 0).any() or (span_index(launch_ns[firsts], inside_calls) >= 0).any():
            continue
        key = (count, float(np.median(gaps)), -phase)
        if best is None or key > best:
            best = key
    return None if best is None else -best[2]


def find_iterations(trace: RawTrace, launches: pd.DataFrame, mode: str = "auto") -> Iterations:
    """The iterations of a whole-run capture (no region), warm-up not yet set apart (see
    attribution/steady.py). mode "none": none looked for (the whole run is counted)."""
    excluded = compile_spans(trace.ops)
    if mode == "none":
        return Iterations("off", compile_spans_ns=excluded)
    if launches.empty:
        return Iterations("none", compile_spans_ns=excluded)
    order = _launch_order(launches)
    launch_ns = order["launch_ns"].to_numpy(dtype=np.int64)
    tokens = _tokens(order, excluded)
    found = (_profiler_steps(trace.ops, launch_ns) or _optimizer_steps(trace.ops, launch_ns)
             or _repeated_calls(trace.ops, order, tokens)
             or _kernel_sequence(order, tokens, merge_spans([(o.ts_ns + 1, o.end_ns) for o in _root_calls(trace.ops)])))
    if found is None:
        return Iterations("none", compile_spans_ns=excluded)
    found.compile_spans_ns = excluded
    return found
