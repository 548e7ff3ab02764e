"""Which ops may have the same tensor among their inputs, and their tensor identities joined on.

The Chrome trace records no storage pointers and no dtypes of tensor-list elements; the
profiler's event tree does (capture/run/tensor_identities.py walks it for the few ops that need
them), keyed by (op name, start time in ns of the profiler's clock). This module names those
ops, from a trace or from a reading worker's rows, and attaches what the tree gave.
"""

from __future__ import annotations

from typing import Any

from rooflinectl.capture.read.builder import ns_from, trace_origin_ns
from rooflinectl.capture.read.raw import RawOp, RawTrace
from rooflinectl.capture.read.spec import OP_AT


def identity_candidates(trace: RawTrace) -> list[int]:
    """Indices of the ops whose cost may depend on which inputs are the same tensor: two tensor
    inputs recorded alike (same type, dims and strides: the same tensor passed twice must be),
    or a tensor list (whose element dtypes the trace does not record either)."""
    verdicts: dict[tuple[int, int, int], bool] = {}  # decided once per distinct (shared) input lists
    return [i for i, op in enumerate(trace.ops)
            if _may_share_an_input(verdicts, op.category, op.input_dims, op.input_types, op.input_strides)]


def identity_times_us(op_rows: list[tuple[Any, ...]]) -> list[float]:
    """identity_candidates of ops given as a TraceBuilder's rows (a reading worker's): their
    start times in the trace's microseconds (profiler_times_us makes them the profiler's)."""
    verdicts: dict[tuple[int, int, int], bool] = {}
    ts, category, inputs = OP_AT["ts_ns"], OP_AT["category"], OP_AT["input_dims"]
    return [row[ts] for row in op_rows
            if _may_share_an_input(verdicts, row[category], row[inputs], row[inputs + 1], row[inputs + 2])]


def profiler_times_us(times_us: list[float], first_us: float, top: dict[str, Any] | None) -> list[int]:
    """Trace times (microseconds, as recorded) as whole microseconds of the profiler's clock, with
    the arithmetic TraceBuilder.finish gives the ops: (origin_ns + ts_ns) // 1000."""
    if not times_us:
        return []
    origin_ns = trace_origin_ns(first_us, top)
    return [(origin_ns + t) // 1000 for t in ns_from(times_us, first_us)]


def _may_share_an_input(verdicts: dict[tuple[int, int, int], bool], category: str, dims: list[Any],
                        types: list[Any], strides: list[Any]) -> bool:
    if category != "cpu_op":
        return False
    key = (id(dims), id(types), id(strides))  # the lists are shared: one verdict per distinct call
    verdict = verdicts.get(key)
    if verdict is None:
        verdict = verdicts[key] = _may_alias(types, dims, strides)
    return verdict


def _may_alias(types: list[Any], all_dims: list[Any], all_strides: list[Any]) -> bool:
    tensors = []
    for i, type_name in enumerate(types):
        if type_name == "TensorList":
            return True
        dims = all_dims[i] if i < len(all_dims) else None
        if isinstance(dims, list) and type_name and type_name not in NON_TENSOR_TYPES:
            strides = all_strides[i] if i < len(all_strides) else None
            tensors.append(repr((type_name, dims, strides)))
    return len(tensors) != len(set(tensors))


NON_TENSOR_TYPES = ("Scalar", "ScalarList", "GenericList", "TensorList")


def _fill_list_dims(op: RawOp, list_dims: list[Any]) -> None:
    """Tensor-list shapes from the event tree where the Chrome trace left them out (it records
    none for a list of more than 30 tensors, such as an optimizer's parameter list)."""
    for i, dims in enumerate(list_dims):
        if dims and i < len(op.input_types) and op.input_types[i] == "TensorList" and i < len(op.input_dims) \
                and not op.input_dims[i]:
            op.input_dims = list(op.input_dims)  # a copy: equal ops share their input lists
            op.input_dims[i] = dims


def add_tensor_info(trace: RawTrace, tensor_info: dict[tuple[str, int], dict[str, Any]]) -> None:
    """Attach tensor identities and list dtypes (from the profiler's event tree) to the ops.

    tensor_info is keyed by (op name, start in ns of the profiler's clock): the trace's own start
    times agree with the tree's to a nanosecond or two (the trace writes microseconds with three
    decimals), while two ops of one name on one thread start microseconds apart, so the nearest
    key within TREE_MATCH_NS is the op's own (rounding both to whole microseconds was not: x * x
    and x * y a microsecond apart swapped their identities)."""
    names = {name for name, _ in tensor_info}  # the few ops walked for identities: skip the rest at once
    for op in trace.ops:
        if op.category != "cpu_op" or op.name not in names:
            continue
        start_ns = trace.origin_ns + op.ts_ns
        for delta in _NEAREST_FIRST:
            info = tensor_info.get((op.name, start_ns + delta))
            if info:
                op.input_storages = info.get("storages", [])
                op.list_dtypes = info.get("list_dtypes", [])
                _fill_list_dims(op, info.get("list_dims") or [])
                break


TREE_MATCH_NS = 3
_NEAREST_FIRST = sorted(range(-TREE_MATCH_NS, TREE_MATCH_NS + 1), key=abs)


def add_tensor_accesses(trace: RawTrace, accesses: dict[tuple[str, int], tuple[list[int], list[int]]]) -> int:
    """Attach each op's tensor reads and writes (capture/run/tensor_accesses.py), matched to the
    op as add_tensor_info matches identities; returns how many ops got them."""
    if not accesses:
        return 0
    matched = 0
    for op in trace.ops:
        if op.category != "cpu_op":
            continue
        start_ns = trace.origin_ns + op.ts_ns
        for delta in _NEAREST_FIRST:
            found = accesses.get((op.name, start_ns + delta))
            if found is not None:
                op.tensor_reads, op.tensor_writes = found
                matched += 1
                break
    return matched
