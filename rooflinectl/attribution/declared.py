"""Triton launches' own costs, joined to the kernels the trace recorded.

Before: the capture's per-launch summaries (capture/run/triton_hook.py), in launch order: a cost the
kernel declared through launch_metadata, or for an undeclared kernel the bytes its tensor
arguments span (`from_arguments`), each marked `captured` when it was launched into a CUDA
graph's stream capture. After: per traced kernel, the summary of its own launch, or None.

Rules:
- An eager launch: the i-th traced kernel of a name takes the i-th summary of that name made
  outside any capture.
- A CUDA graph's replay runs no Python, so no summary is made per replay: a replayed kernel
  (launched by cudaGraphLaunch) takes the summary made when the graph was captured. Within one
  replay, the i-th kernel of a name takes the i-th captured summary of that name, when the replay
  runs as many kernels of that name as were captured (one graph holds them); else, when every
  captured launch of that name recorded the same cost (one graph captured again in each
  iteration, say), that cost; else (graphs that captured it with different costs) none.
- A declared cost is held to the unit and width it declares; bytes from the arguments are a
  minimum with FLOPs unknown (cost_source triton-args): the kernel is held to the memory roof on
  them, and its efficiency is a lower bound. Both costs come from costs/ (TritonDeclaration,
  TritonArguments: costs/triton_declared.py).
"""

from __future__ import annotations

from collections import Counter, defaultdict, deque
from typing import Any

from rooflinectl.attribution.records import Attribution
from rooflinectl.capture.read.raw import RawTrace
from rooflinectl.costs import TritonArguments, TritonDeclaration, cost_of

ARGUMENTS_SOURCE = "triton-args"
REPLAY_NOTE = "replayed from a CUDA graph: cost recorded when the graph was captured"


class DeclaredLaunches:
    """The launch summaries, handed to traced kernels by the rules above."""

    def __init__(self, trace: RawTrace) -> None:
        self.eager: dict[str, deque[dict[str, Any]]] = defaultdict(deque)
        self.captured: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for launch in trace.triton_launches:
            (self.captured[launch["name"]].append if launch.get("captured") else self.eager[launch["name"]].append)(launch)
        self.graph_correlations = set(trace.graph_launches) if self.captured else set()
        self._replay_counts: dict[int, Counter[str]] = defaultdict(Counter)
        if self.captured:
            for k in trace.kernels:
                if k.correlation in self.graph_correlations and k.category == "kernel" and k.name in self.captured:
                    self._replay_counts[k.correlation][k.name] += 1
        self._taken: Counter[tuple[int, str]] = Counter()
        self._same: dict[str, bool] = {}
        self._attributions: dict[tuple[int, bool, str, str], Attribution] = {}

    def __bool__(self) -> bool:
        return bool(self.eager or self.captured)

    def take(self, name: str, correlation: int) -> dict[str, Any] | None:
        """The summary of this traced kernel's launch (see the module's rules), or None."""
        if correlation in self.graph_correlations:
            captured = self.captured.get(name)
            if not captured:
                return None
            position = self._taken[(correlation, name)]
            self._taken[(correlation, name)] += 1
            if self._replay_counts[correlation][name] == len(captured):
                return captured[position]
            return captured[0] if self._one_cost(name) else None
        queue = self.eager.get(name)
        return queue.popleft() if queue else None


    def attribution(self, name: str, correlation: int, declared: dict[str, Any], origin: str, op: str) -> Attribution:
        """declared_attribution, made once per distinct summary (launches share their summary's dict)."""
        replayed = correlation in self.graph_correlations
        key = (id(declared), replayed, origin, op)
        found = self._attributions.get(key)
        if found is None:
            found = self._attributions[key] = declared_attribution(name, declared, origin, op, replayed)
        return found

    def _one_cost(self, name: str) -> bool:
        """Whether every captured launch of `name` recorded the same cost (a graph captured again
        and again, in each iteration, with the same tensors' sizes)."""
        found = self._same.get(name)
        if found is None:
            keys = {(c.get("flops"), c.get("bytes"), repr(c.get("shapes")), c.get("precision")) for c in self.captured[name]}
            found = self._same[name] = len(keys) == 1
        return found


def declared_attribution(name: str, declared: dict[str, Any], origin: str, op: str = "",
                         replayed: bool = False) -> Attribution:
    """A kernel's Attribution from its own launch's summary; `op` names the user's op that
    launched it (a torch.library op wrapping the kernel), else the kernel's name stands."""
    note = REPLAY_NOTE if replayed else ""
    if declared.get("from_arguments"):
        shapes = ", ".join(str(list(s)) for s in declared.get("shapes") or [])
        return Attribution(op or name, cost_of(TritonArguments(declared)), 1.0, shapes, origin, ARGUMENTS_SOURCE, note)
    return Attribution(op or name, cost_of(TritonDeclaration((declared,))), 1.0, "", origin, "triton", note)
