"""`profile --profile-steps N`: profile a script's first N iterations, then let it run on without
the profiler and time each later iteration as the script would time its loop.

Why: the profiler's host cost per recorded op stretches a launch-bound step (eager ResNet-50
training on the H200 machine: +41% to +100% with a bare torch.profiler,
docs/benchmarks/steady-state.md), so a profiled step time is not the user's step time. The
iterations after the profile run as the program runs alone (profiler stopped, module scopes
switched off, the Triton launch hook removed), and the time between consecutive iteration boundaries, taken
with CUDA events on the current stream (wall clock on CPU), is the un-profiled step time,
measured in the same process on the same data.

Iterations are found live by what the program marks, as attribution/iterations.py finds them
after the run: steps of the first optimizer that steps (torch's global optimizer step hook),
else calls of the first top-level module (a forward pre-hook on that one module, added at its
first call and removed at the end), else calls of the first torch.compile'd graph that runs (a
loop over a compiled function: capture/run/compiled_calls.py). The profiler stops right after the
N-th optimizer step, or when the top-level module or the graph is called for the (N+1)-th time;
an annotation open at that moment (the optimizer's own, a region, Dynamo's compiled region)
simply ends there. A run of M iterations gives M - N - 1 timed steps: each is the time from one
boundary to the next, none straddles the stop.

The default (`--profile-steps auto`) profiles AUTO_STEPS iterations: the setup before the loop,
the first iteration (the warm-up: allocation, algorithm choice, compilation), one more that may
still warm up (cuDNN's benchmark, an autotuner, a second compile), and three steady ones, which
the kernel table counts (attribution/steady.py sets the warm-up apart again from the trace).
A fixed count, not one chosen from timings, so a script gets the same profile on every run.
`--profile-steps all` profiles the whole run (the old default). At the stop, the marker that is
not the iteration marker is removed: only the marker's own hook (one Python call and one CUDA
event record a step) stays in the un-profiled steps.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable
from typing import Any

import torch

from rooflinectl.capture.run.compiled_calls import graph_name, watch_calls

MAX_TIMED_STEPS = 100_000  # boundaries kept: a long run's timing stays a few MB
AUTO_STEPS = 5  # --profile-steps auto: setup, 1-2 warm-up iterations and 3 steady ones profiled
AUTO = "auto"
ALL = "all"

OPTIMIZER_STEP = "optimizer_step"
MODULE_FORWARD = "module_forward"
COMPILED_GRAPH = "compiled_graph"


def resolve_steps(value: int | str | None) -> tuple[int | None, str]:
    """(iterations to profile, rule) of a --profile-steps value: "auto" -> (AUTO_STEPS, "auto"),
    N -> (N, "fixed"), "all" or None -> (None, "all"): the whole run profiled."""
    if value is None or str(value).strip().lower() == ALL:
        return None, ALL
    text = str(value).strip().lower()
    if text == AUTO:
        return AUTO_STEPS, AUTO
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"{value!r} is not auto, all or a positive number of iterations")
    return int(text), "fixed"


class StepLimit:
    """Counts iterations as they happen; calls `stop` once N have been profiled, then records a
    timestamp at each later boundary."""

    def __init__(self, steps: int, device_kind: str, stop: Callable[[], None], rule: str = "fixed") -> None:
        self.steps = steps
        self.rule = rule  # "auto" (the default: AUTO_STEPS) or "fixed" (--profile-steps N)
        self.cuda = device_kind == "cuda"
        self._stop = stop
        self.stopped = False
        self.optimizer: weakref.ref[Any] | None = None
        self.optimizer_name = ""
        self.optimizer_steps = 0
        self.module: weakref.ref[torch.nn.Module] | None = None
        self.module_name = ""
        self.module_calls = 0
        self.graph: Any = None  # the first compiled graph that ran (held: Dynamo's cache holds it anyway)
        self.graph_name = ""
        self.graph_calls = 0
        self.marker = ""
        self.stop_error = ""  # why stopping failed, if it did (the run goes on either way)
        self.events: list[tuple[Any, float]] = []  # (CUDA event or None, perf_counter) per boundary
        self._handles: list[Any] = []  # the optimizer step hook
        self._module_handles: list[Any] = []  # the watched module's pre-hook
        self._unwatch_graphs: Callable[[], None] = lambda: None

    def install(self) -> None:
        from torch.optim.optimizer import register_optimizer_step_post_hook

        self._handles.append(register_optimizer_step_post_hook(self._after_optimizer_step))
        self._unwatch_graphs = watch_calls(self._before_graph_call)

    def remove(self) -> None:
        for handle in [*self._handles, *self._module_handles]:
            handle.remove()
        self._handles.clear()
        self._module_handles.clear()
        self._unwatch_graphs()

    def _keep_only_the_marker(self, marker: str) -> None:
        """At the stop: the hooks that do not mark iterations go (the un-profiled steps pay only
        for the marker's own)."""
        if marker != OPTIMIZER_STEP:
            for handle in self._handles:
                handle.remove()
            self._handles.clear()
        if marker != MODULE_FORWARD:
            for handle in self._module_handles:
                handle.remove()
            self._module_handles.clear()
        if marker != COMPILED_GRAPH:
            self._unwatch_graphs()

    def at_top_level_call(self, module: torch.nn.Module) -> None:
        """Module scopes saw an outermost module call (before its hooks run): the first such
        module is watched, and its calls are counted here while the profiler runs."""
        if torch.compiler.is_compiling():
            return
        if self.module is None:
            self.module = weakref.ref(module)
            self.module_name = type(getattr(module, "_orig_mod", module)).__name__
            self._module_handles.append(module.register_forward_pre_hook(self._before_module_call))
        if self.module() is module:
            self.module_calls += 1

    def _after_optimizer_step(self, optimizer: Any, _args: Any, _kwargs: Any) -> None:
        if self.optimizer is None:
            self.optimizer = weakref.ref(optimizer)
            self.optimizer_name = type(optimizer).__name__
        elif self.optimizer() is not optimizer:
            return
        self.optimizer_steps += 1
        if self.stopped:
            if self.marker == OPTIMIZER_STEP:
                self._mark()
        elif self.optimizer_steps >= self.steps:
            self._stop_here(OPTIMIZER_STEP)

    def _before_module_call(self, _module: torch.nn.Module, _inputs: Any) -> None:
        """The watched module's pre-hook: where the profiler stops (no profiler callback of ours
        is running here), and, once stopped, a boundary (the module scopes are off then, so the
        calls are counted here)."""
        if torch.compiler.is_compiling():
            return
        if self.stopped:
            self.module_calls += 1
            if self.marker == MODULE_FORWARD:
                self._mark()
        elif self.optimizer is None and self.module_calls > self.steps:
            self._stop_here(MODULE_FORWARD)

    def _before_graph_call(self, graph: Any) -> None:
        """A compiled graph is about to run: the first one that runs is watched; its calls mark
        iterations when no optimizer stepped and no top-level module was called."""
        if self.graph is None:
            self.graph, self.graph_name = graph, graph_name(graph)
        if graph is not self.graph:
            return
        self.graph_calls += 1
        if self.stopped:
            if self.marker == COMPILED_GRAPH:
                self._mark()
        elif self.optimizer is None and self.module is None and self.graph_calls > self.steps:
            self._stop_here(COMPILED_GRAPH)

    def _stop_here(self, marker: str) -> None:
        self.stopped = True
        self.marker = marker
        try:
            self._stop()
        except Exception as exc:  # noqa: BLE001 - runs inside the user's hook: never raise into their program
            self.stop_error = f"{type(exc).__name__}: {exc}"
        self._keep_only_the_marker(marker)  # the others: the un-profiled steps pay nothing for them
        if marker in (MODULE_FORWARD, COMPILED_GRAPH):
            self._mark()  # this call starts the first un-profiled iteration

    def _mark(self) -> None:
        if len(self.events) >= MAX_TIMED_STEPS + 1:
            return
        event = None
        if self.cuda:
            try:
                event = torch.cuda.Event(enable_timing=True)
                event.record()
            except RuntimeError:  # runs inside the user's hook: a device error is theirs to meet, not ours
                return
        self.events.append((event, time.perf_counter()))

    def step_times_s(self) -> list[float]:
        """Seconds between consecutive boundaries (CUDA events on the GPU; call after a sync). A
        pair of events that cannot be compared (recorded on two devices, a device in an error
        state) gives no time rather than a wrong one."""
        times: list[float] = []
        for (a, a_s), (b, b_s) in zip(self.events, self.events[1:], strict=False):
            if a is None or b is None:
                times.append(b_s - a_s)
                continue
            try:
                times.append(a.elapsed_time(b) / 1e3)
            except RuntimeError:
                continue
        return times

    def metadata(self) -> dict[str, Any]:
        """What the profile keeps: how iterations were marked, and the timed steps."""
        marker = self.marker or (OPTIMIZER_STEP if self.optimizer is not None else
                                 COMPILED_GRAPH if self.module is None and self.graph is not None else MODULE_FORWARD)
        seen = {OPTIMIZER_STEP: (self.optimizer_name, self.optimizer_steps),
                MODULE_FORWARD: (self.module_name, self.module_calls),
                COMPILED_GRAPH: (self.graph_name, self.graph_calls)}
        times = self.step_times_s()
        tail_s = time.perf_counter() - self.events[-1][1] if self.stopped and self.events else None
        return {
            "steps": self.steps,
            "rule": self.rule,
            "stopped": self.stopped,
            "marker": marker,
            "marker_name": seen[marker][0],
            "iterations_seen": seen[marker][1],
            "timed_by": "cuda_events" if self.cuda else "wall_clock",
            "step_times_s": times,
            "tail_s": tail_s,  # host time from the last boundary to the end of the run (after a sync on CUDA)
            **({"stop_error": self.stop_error} if self.stop_error else {}),
        }
