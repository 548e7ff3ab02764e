"""CUDA-graph replays (torch.compile mode="reduce-overhead", torch.cuda.graphs): which op each
replayed kernel comes from.

The profiler traces a replay's kernels with their measured durations, but links them only to
the `cudaGraphLaunch` call: their External id names the op around the launch (e.g.
"Torch-Compiled Region"), not the op that launched each kernel when the graph was captured.
The capture itself is in the trace: between cudaStreamBeginCapture and cudaStreamEndCapture
each launch call names its op (a `triton_*` op with Inductor's cost, `aten::addmm` with its
shapes). A graph replays its captured work in capture order, so the i-th kernel (memset,
memcpy) of a replay is the i-th kernel (memset, memcpy) launched into the capture. We accept a
capture only when the counts of each kind agree and every Inductor kernel's name equals the
name of its capture op; else the replay's kernels stay unattributed (cost_source none).
Times stay measured; only the op (its cost, its name, its module) comes from the capture.
A graph captured before profiling started leaves nothing to map.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

from rooflinectl.capture.read.raw import RawKernel, RawTrace

_KIND_OF_CATEGORY = {"kernel": "kernel", "gpu_memset": "memset", "gpu_memcpy": "memcpy"}


def _by_kind(items: list[tuple[str, object]]) -> dict[str, list[object]]:
    grouped: dict[str, list[object]] = defaultdict(list)
    for kind, item in items:
        grouped[kind].append(item)
    return grouped


def replay_sources(trace: RawTrace, op_name: Callable[[int], str | None]) -> dict[int, int]:
    """id(kernel) -> External id of the op that launched the same work into the graph's capture,
    for each kernel replayed from a CUDA graph whose capture the trace holds. op_name(external id)
    gives that op's name (None if the trace has no such op)."""
    graph_correlations = set(trace.graph_launches)
    if not graph_correlations or not trace.graph_captures:
        return {}
    replays: dict[int, list[RawKernel]] = defaultdict(list)
    for k in trace.kernels:
        if k.correlation in graph_correlations:
            replays[k.correlation].append(k)
    captures = [_by_kind(list(c)) for c in trace.graph_captures if c]
    sources: dict[int, int] = {}
    for kernels in replays.values():
        kernels.sort(key=lambda k: (k.ts_ns, k.correlation))
        replay = _by_kind([(_KIND_OF_CATEGORY.get(k.category, "kernel"), k) for k in kernels])
        for capture in captures:
            if _matches(replay, capture, op_name):
                for kind, replayed in replay.items():
                    for k, external_id in zip(replayed, capture[kind]):
                        sources[id(k)] = int(external_id)  # type: ignore[call-overload]
                break
    return sources


def _matches(replay: dict[str, list[object]], capture: dict[str, list[object]],
             op_name: Callable[[int], str | None]) -> bool:
    if {kind: len(items) for kind, items in replay.items()} != {kind: len(items) for kind, items in capture.items()}:
        return False
    for k, external_id in zip(replay.get("kernel", []), capture.get("kernel", [])):
        name = k.name  # type: ignore[attr-defined]
        if name.startswith(("triton_", "cpp_")) and op_name(int(external_id)) != name:  # type: ignore[call-overload]
            return False
    return True
