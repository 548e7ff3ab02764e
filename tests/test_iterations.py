"""Iteration detection on real H200 traces, one test per path, checked against each run's own
CUDA-event timing of its loop (record.log TIMING lines) and the trace's own marks."""

from __future__ import annotations

import statistics

import numpy as np
import pandas as pd
import pytest
from real_traces import attributed, raw_json, timed_median_s, timed_steps, trace

from rooflinectl.attribution.iterations import Iterations, find_iterations
from rooflinectl.attribution.join import attribute
from rooflinectl.attribution.spans import span_index
from rooflinectl.attribution.steady import choose_warmup, split_steady
from rooflinectl.capture.run.region import REGION_PREFIX

WITHIN = 0.05  # per-iteration time against the CUDA events of the same loop


def steady(name: str, wanted: int | None = None):
    t, a = attributed(name)
    found = find_iterations(t, a.launches)
    return found, split_steady(a.launches, found, wanted)


def median_s(state) -> float:
    return statistics.median(state.iteration_times_s)


def test_profiler_step_annotations_are_the_iterations() -> None:
    """The script's own profiler wrote ProfilerStep#2..#4 (schedule wait=1, warmup=1, active=3)."""
    found, state = steady("gpt2_fwd_userprof")
    assert (found.method, found.found, found.warmup) == ("profiler_step", 3, 1)
    # kineto's own device-side span of each step (gpu_user_annotation), for the steady steps #3, #4
    gpu_spans = {e["name"]: e["dur"] / 1e6 for e in raw_json("gpt2_fwd_userprof")["traceEvents"]
                 if e.get("cat") == "gpu_user_annotation"}
    expected = statistics.median([gpu_spans["ProfilerStep#3"], gpu_spans["ProfilerStep#4"]])
    assert median_s(state) == pytest.approx(expected, rel=WITHIN)
    # the same forward, timed with CUDA events in the unprofiled-by-the-script run
    assert median_s(state) == pytest.approx(timed_median_s("gpt2_fwd_eager"), rel=WITHIN)


@pytest.mark.parametrize("name, optimizer", [
    ("resnet50_train_eager", "Optimizer.step#SGD.step"),
    ("gpt2_train_eager", "Optimizer.step#AdamW.step"),
    ("ddp_gpt2.rank0", "Optimizer.step#AdamW.step"),
])
def test_optimizer_steps_end_the_iterations(name: str, optimizer: str) -> None:
    """2 warm-up + 3 timed steps: 5 found; the per-iteration time is the timed loop's."""
    found, state = steady(name)
    assert (found.method, found.marker, found.found) == ("optimizer_step", optimizer, 5)
    assert 3 <= len(state.iteration_times_s) <= 4
    assert median_s(state) == pytest.approx(timed_median_s(name), rel=WITHIN)
    # asked for the timed loop's length, the last 3 iterations are its 3 CUDA-event timed steps
    _, timed = steady(name, wanted=timed_steps(name))
    assert len(timed.iteration_times_s) == 3
    assert median_s(timed) == pytest.approx(timed_median_s(name), rel=WITHIN)


@pytest.mark.parametrize("name, forwards, period", [
    ("gpt2_fwd_eager", 8, 47),  # 3 warm-up + 5 timed forwards; the first differs (lazy init)
    ("moe_loop", 5, 28),  # 2 + 3
    ("moe_grouped", 5, 5),
])
def test_repeated_kernel_sequences_without_any_annotation(name: str, forwards: int, period: int) -> None:
    found, state = steady(name)
    assert found.method == "kernel_sequence"
    assert found.found in (forwards - 1, forwards)  # a first call that launches extra kernels is not a repeat
    counted = state.steady
    assert len(counted) == period * len(state.iteration_times_s)
    assert median_s(state) == pytest.approx(timed_median_s(name), rel=WITHIN)


def test_repeated_sequence_starts_where_the_forward_starts() -> None:
    """Each iteration starts with the kernel the first forward started with (the one after the
    input ids' randint kernel): the phase with the longest host gaps finds the loop's boundary."""
    found, _ = steady("gpt2_fwd_eager")
    kernels = sorted((e for e in raw_json("gpt2_fwd_eager")["traceEvents"] if e.get("cat") == "kernel"),
                     key=lambda e: e["ts"])
    after_ids = next(i for i, e in enumerate(kernels) if "distribution_elementwise" in e["name"]) + 1
    assert found.marker == kernels[after_ids]["name"]
    _, a = attributed("gpt2_fwd_eager")
    order = a.launches.sort_values("launch_ns")
    assert {order[order["launch_ns"] >= s].iloc[0]["kernel"] for s, _ in found.spans_ns} == {found.marker}


def test_compiled_graph_calls_and_compilation_set_apart() -> None:
    """torch.compile: 3 warm-up + 3 timed calls of one compiled graph; the first compiles and runs
    Inductor's autotuning benchmarks (each candidate kernel launched many times): all setup."""
    found, state = steady("gpt2_fwd_compiled")
    assert (found.method, found.found) == ("compiled_call", 6)
    compile_s = sum(b - a for a, b in found.compile_spans_ns) / 1e9
    assert compile_s > 5.0  # dynamo's first mark to the end of the autotuning call, host time
    per_iteration = state.steady.groupby("kernel").size() / len(state.iteration_times_s)
    assert (per_iteration == per_iteration.round()).all(), "a benchmark launch leaked into the steady state"
    _, timed = steady("gpt2_fwd_compiled", wanted=timed_steps("gpt2_fwd_compiled"))
    assert median_s(timed) == pytest.approx(timed_median_s("gpt2_fwd_compiled"), rel=WITHIN)


def test_cuda_graph_replays_are_iterations_too() -> None:
    """reduce-overhead: each call of the compiled graph replays a CUDA graph (5 cudaGraphLaunch,
    28 replayed kernels each); the calls are the iterations and time them end to end."""
    found, state = steady("gpt2_fwd_reduce_overhead")
    assert found.method == "compiled_call"
    assert median_s(state) == pytest.approx(timed_median_s("gpt2_fwd_reduce_overhead"), rel=WITHIN)


def test_none_found_counts_the_whole_run() -> None:
    """examples/mlp.py --steps 1: one step after one warm-up step, two identical layers: no loop."""
    t = trace("mlp_small")
    t.ops = [o for o in t.ops if not o.name.startswith(REGION_PREFIX)]  # as if the script had no region
    a = attribute(t, "cuda", {})
    found = find_iterations(t, a.launches)
    assert found.method == "none" and found.found == 0
    state = split_steady(a.launches, found)
    assert len(state.steady) == len(t.kernels) and state.setup.empty


def test_iterations_none_is_not_looked_for() -> None:
    t, a = attributed("gpt2_fwd_eager")
    assert find_iterations(t, a.launches, "none").method == "off"


def test_a_boundary_never_falls_inside_one_call_of_the_top_level_module() -> None:
    """One forward of a model with 3 identical layers repeats its layers 3 times: inside one call
    of the top-level module (rooflinectl's module scopes) they are not iterations."""
    layer = ["gemm", "gelu", "gemm", "norm"]
    names = ["embed"] + layer * 3 + ["head"]
    launches = _launches(names, gap_ns=[1000] * len(names))
    from rooflinectl.capture.read.raw import RawOp, RawTrace

    bare = RawTrace(ops=[], kernels=[], launch_ts_ns={})
    assert find_iterations(bare, launches).method == "kernel_sequence"
    call = RawOp(external_id=-1, name="rooflinectl.module:Model", category="user_annotation", tid=1,
                 ts_ns=0, dur_ns=int(launches["launch_ns"].max()) + 10)
    assert find_iterations(RawTrace(ops=[call], kernels=[], launch_ts_ns={}), launches).method == "none"


def test_phase_follows_the_host_gaps() -> None:
    """A B C repeated 4 times after a setup kernel that looks like C: the loop returns to Python
    (a long host gap) before each A, so iterations start at A, not at the setup's C."""
    names = ["C"] + ["A", "B", "C"] * 4 + ["tail"]
    gaps = [10] + [500, 10, 10] * 4 + [10]
    found = find_iterations(_bare(), _launches(names, gaps))
    assert found.method == "kernel_sequence" and found.found == 4
    launches = _launches(names, gaps)
    index = span_index(launches["launch_ns"].to_numpy(), found.spans_ns)
    assert list(launches["kernel"][index >= 0]) == ["A", "B", "C"] * 4


def test_two_repeats_are_not_a_loop_without_a_mark() -> None:
    assert find_iterations(_bare(), _launches(["x", "A", "B", "A", "B", "y"], [100] * 6)).method == "none"


def test_warmup_is_the_first_iteration_and_slow_ones_after_it() -> None:
    assert choose_warmup([9.0, 1.0, 1.0, 1.0], None) == 1
    assert choose_warmup([1.0, 1.0, 1.0, 1.0], None) == 1  # the first is warm-up even when it is not slow
    assert choose_warmup([9.0, 1.3, 1.0, 1.0, 1.0, 1.0], None) == 2  # 30% slower than what follows
    assert choose_warmup([9.0, 5.0, 4.0, 3.0], None) == 2  # never more than half
    assert choose_warmup([9.0, 1.0, 1.0, 1.0], 2) == 2  # --iterations 2: the last two


def test_iteration_times_are_end_to_end_on_the_device() -> None:
    """Three iterations: kernels [0,10] [15,25] [40,45] (ns): 10, then 25-10 = 15, then 45-25 = 20."""
    launches = pd.DataFrame({"launch_ns": [0, 12, 30], "start_ns": [0, 15, 40], "end_ns": [10, 25, 45],
                             "time_s": [1e-8, 1e-8, 5e-9], "kernel": ["k"] * 3})
    found = Iterations("optimizer_step", [(0, 11), (11, 29), (29, 50)])
    state = split_steady(launches, found, wanted=2)
    assert found.warmup == 1
    assert state.iteration_times_s == pytest.approx([15e-9, 20e-9])
    assert state.window_s == pytest.approx(35e-9)
    assert list(state.setup["launch_ns"]) == [0]


def test_a_recompiling_iteration_is_setup() -> None:
    """Four iterations; torch.compile recompiled during the third (a compile mark inside it): its
    launch is setup, the window holds the other counted ones only."""
    launches = pd.DataFrame({"launch_ns": [0, 100, 200, 300], "start_ns": [0, 100, 200, 5000],
                             "end_ns": [10, 110, 4000, 5010], "time_s": [1e-8] * 4, "kernel": ["k"] * 4})
    found = Iterations("compiled_call", [(0, 100), (100, 200), (200, 300), (300, 400)], compile_spans_ns=[(250, 260)])
    state = split_steady(launches, found, wanted=3)
    assert list(state.setup["launch_ns"]) == [0, 200]
    assert state.iteration_times_s == pytest.approx([100e-9, 1010e-9])  # 110-10, then 5010-4000
    assert state.host_spans_ns == [(100, 200), (300, 400)]


def _bare():
    from rooflinectl.capture.read.raw import RawTrace

    return RawTrace(ops=[], kernels=[], launch_ts_ns={})


def _launches(names: list[str], gap_ns: list[int]) -> pd.DataFrame:
    """One launch per name, each launched gap_ns after the previous one and running 5 ns."""
    launch = np.cumsum(gap_ns)
    return pd.DataFrame({"kernel": names, "launch_ns": launch, "start_ns": launch + 1, "end_ns": launch + 6,
                         "time_s": 5e-9, "blocks": 1.0, "threads_per_block": 128.0, "shapes": ""})
