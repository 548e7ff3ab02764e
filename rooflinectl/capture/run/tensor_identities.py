"""Tensor identities from a stopped profiler's event tree: which inputs of an op are the same
tensor (x * x reads x once), read only for the ops that need them (capture/run/session.read_trace)."""

from __future__ import annotations

import bisect
from typing import Any

import torch

from rooflinectl.capture.read.identities import identity_candidates
from rooflinectl.capture.read.raw import RawTrace


def _tensor_info(prof: torch.profiler.profile, trace: RawTrace) -> dict[tuple[str, int], dict[str, Any]]:
    """_tensor_info_at the start times of the trace's identity_candidates."""
    return _tensor_info_at(prof, [(trace.origin_ns + trace.ops[i].ts_ns) // 1000 for i in identity_candidates(trace)])


def _tensor_info_at(prof: torch.profiler.profile, times_us: list[int]) -> dict[tuple[str, int], dict[str, Any]]:
    """Tensor identities (TensorImpl pointers) and tensor-list dtypes from the profiler's event
    tree (private API: when it is missing, a tensor passed twice is simply counted twice), read
    only for the ops that need them (capture.read.identities.identity_candidates): walking the whole tree
    costs more than the rest of the capture on a long run, and most ops cannot share an input.

    We key on the TensorImpl, not the storage pointer: q, k and v split from one packed qkv
    tensor share a storage but are disjoint reads; the same tensor passed twice (x * x, the
    self of an in-place op) is one read. The profiler records no storage offset, so two
    overlapping views of one storage (x @ x.t()) still count twice: an over-count we accept."""
    info: dict[tuple[str, int], dict[str, Any]] = {}
    wanted = sorted(set(times_us))  # whole microseconds of the profiler's clock
    if not wanted:
        return info
    try:
        roots = prof.profiler.kineto_results.experimental_event_tree()
    except Exception:  # noqa: BLE001 - optional, private API
        return info
    stack = list(roots)
    while stack:
        node = stack.pop()
        start_us = node.start_time_ns / 1000
        first = bisect.bisect_left(wanted, start_us - 1.5)  # times are matched within a microsecond or so
        if first == len(wanted) or wanted[first] > node.end_time_ns / 1000 + 1.5:
            continue  # no op that needs identities started inside this node: skip its subtree
        stack.extend(node.children)
        inputs = getattr(node.extra_fields, "inputs", None)
        if inputs is None or wanted[first] > start_us + 1.5:
            continue
        storages: list[Any] = []
        list_dtypes: list[Any] = []
        list_dims: list[Any] = []  # the Chrome trace drops the shapes of lists longer than 30
        for value in inputs:
            if hasattr(value, "impl_ptr"):
                storages.append(value.impl_ptr)
                list_dtypes.append(None)
                list_dims.append(None)
            elif isinstance(value, list):
                storages.append([getattr(t, "impl_ptr", None) for t in value])
                list_dtypes.append([str(getattr(t, "dtype", "")).replace("torch.", "") for t in value])
                list_dims.append([list(getattr(t, "sizes", None) or []) for t in value])
            else:
                storages.append(None)
                list_dtypes.append(None)
                list_dims.append(None)
        info[(node.name, int(node.start_time_ns))] = {"storages": storages, "list_dtypes": list_dtypes,
                                                      "list_dims": list_dims}
    return info
