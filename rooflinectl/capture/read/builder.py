"""The trace reader's engine: events in, RawTrace out (torch.profiler's Chrome trace, chunk by chunk).

Each op and kernel event becomes a row by the spec (spec.py); names, grid/block tuples and equal
input lists are stored once; times become integer nanoseconds from the first event at the end.
"""

from __future__ import annotations

import math
from itertools import starmap
from operator import attrgetter
from typing import Any

from rooflinectl.capture.read.chrome_json import TraceFormatError, decode_json
from rooflinectl.capture.read.raw import (
    RawKernel,
    RawOp,
    RawSync,
    RawTrace,
    device_properties,
    input_signature,
)
from rooflinectl.capture.read.spec import (
    GRAPH_LAUNCH_CALLS,
    KEPT_OP_ARG_SET,
    KEPT_OP_ARGS,
    KERNEL_AT,
    KERNEL_CATEGORIES,
    KERNEL_FIELDS,
    LAUNCH_CATEGORIES,
    OP_AT,
    OP_CATEGORIES,
    OP_FIELDS,
    SCOPE_PREFIXES,
    SYNC_CALLS,
    getter,
)
from rooflinectl.capture.read.typed_events import TypedEvents

_NAME, _CATEGORY, _TID, _TS, _INPUTS = (OP_AT[n] for n in ("name", "category", "tid", "ts_ns", "input_dims"))
(_K_NAME, _K_CATEGORY, _K_TS, _K_DEVICE, _K_STREAM, _K_GRID, _K_BLOCK, _K_BYTES, _K_SHARED,
 _K_REGISTERS) = (KERNEL_AT[n] for n in ("name", "category", "ts_ns", "device", "stream", "grid", "block", "bytes",
                                         "shared_memory", "registers_per_thread"))


def _int(value: Any, default: int = 0) -> int:
    """An integer field that some traces write as a string ("tid": "Trace PyTorch Profiler")."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _count(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and value >= 0 else None


def _triple(value: Any) -> tuple[int, int, int] | None:
    if isinstance(value, (list, tuple)) and len(value) == 3:
        return (int(value[0]), int(value[1]), int(value[2]))
    return None


_CAPTURED_KINDS = (("kernel", ("cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchCooperativeKernel",
                               "cuLaunchCooperativeKernel")),
                   ("memset", ("cudaMemset", "cuMemset")), ("memcpy", ("cudaMemcpy", "cuMemcpy")))


def _graph_captures(calls: list[tuple[int, int, str, int]]) -> list[list[tuple[str, int]]]:
    """Per stream capture (cudaStreamBeginCapture .. cudaStreamEndCapture on one thread), the
    launches made into it in order. calls: (tid, ts, runtime call name, External id)."""
    captures: list[list[tuple[str, int]]] = []
    open_by_tid: dict[int, list[tuple[str, int]]] = {}
    for tid, _, name, external_id in sorted(calls):
        if name.startswith("cudaStreamBeginCapture"):
            open_by_tid[tid] = []
        elif name.startswith("cudaStreamEndCapture"):
            if tid in open_by_tid:
                captures.append(open_by_tid.pop(tid))
        elif tid in open_by_tid:
            kind = next((k for k, prefixes in _CAPTURED_KINDS if name.startswith(prefixes)), None)
            if kind is not None:
                open_by_tid[tid].append((kind, external_id))
    return captures


# Shared empties: a million ops need no million empty lists and dicts. Records never mutate them
# (add_tensor_info assigns new lists).
_NO_LIST: list[Any] = []
_NO_ARGS: dict[str, Any] = {}


class TraceBuilder:
    """Builds a RawTrace from events fed in chunks (chunk after chunk of a streamed file).

    Each op and kernel event becomes a row: the spec's values (OP_FIELDS, KERNEL_FIELDS) with the
    fields that need more than a lookup fixed in place, as a tuple in the record's field order.
    The serial reader makes each chunk's rows records at once (`records=True`); a reading worker
    (capture/read/trace_parallel.py) sends its rows on as columns and never makes the records. Names,
    grid/block tuples and equal input lists are stored once: a million launches of a few distinct
    ops hold a few of each, not millions (and attribution costs each distinct call once).
    """

    def __init__(self, records: bool = True) -> None:
        self.records = records
        self.ops: list[RawOp] = []
        self.kernels: list[RawKernel] = []
        self.op_rows: list[tuple[Any, ...]] = []  # RawOp fields, in order, not yet made records
        self.kernel_rows: list[tuple[Any, ...]] = []
        self.launch_us: dict[int, float] = {}
        self.graph_launches: list[int] = []
        self.runtime_calls: list[tuple[int, float, str, int]] = []  # (tid, ts, name, External id)
        self.syncs: list[RawSync] = []
        self.capture_calls = 0  # cudaStreamBeginCapture seen: graph_captures needs runtime_calls
        self.first_us = math.inf
        self.events = 0  # complete (ph X) events seen, and those without a usable start time
        self.undated = 0
        self._op_values = getter(OP_FIELDS)
        self._op_values_raw = getter(OP_FIELDS, raw_inputs=True)
        self._kernel_values = getter(KERNEL_FIELDS)
        self._inputs: dict[Any, tuple[list[Any], ...]] = {}
        self._raw_inputs: dict[bytes, tuple[list[Any], ...]] = {}  # raw JSON text -> shared lists
        self._names: dict[str, str] = {}
        self._triples: dict[tuple[Any, ...], tuple[int, int, int] | None] = {}
        self._numbers: dict[int, int] = {}

    def _shared(self, lists: tuple[list[Any], ...]) -> tuple[list[Any], ...]:
        """The shared copy of an op's four input lists (dims, types, strides, concrete values)."""
        return self._inputs.setdefault(input_signature(lists), lists)

    def _share_inputs(self, op: RawOp) -> None:
        """The op's input lists replaced by the shared copy of equal lists."""
        op.input_dims, op.input_types, op.input_strides, op.concrete_inputs = self._shared(
            (op.input_dims, op.input_types, op.input_strides, op.concrete_inputs))

    def _shared_raw(self, texts: tuple[Any, ...]) -> tuple[list[Any], ...]:
        """The shared copy of an op's four input lists given as raw JSON text (a typed event's):
        each distinct text decoded once. Keyed by a copy of the four texts joined with NUL (which
        JSON text never holds raw), never by the raw objects: they hold on to the whole block
        they were decoded from."""
        key = b"\0".join(texts)
        lists = self._raw_inputs.get(key)
        if lists is None:
            lists = self._raw_inputs[key] = self._shared(tuple(map(decode_json, map(bytes, texts))))
        return lists

    def _number(self, value: int) -> int:
        """One int object per distinct value (a few hundred kernels' shared-memory sizes)."""
        return self._numbers.setdefault(value, value)

    def _triple(self, value: Any) -> tuple[int, int, int] | None:
        if not isinstance(value, list):
            return None
        key = tuple(value)
        if key not in self._triples:
            self._triples[key] = _triple(value)
        return self._triples[key]

    def add(self, events: list[Any]) -> None:
        """Events as decode_events gives them: dicts of every key, or TypedEvents."""
        raw = isinstance(events, TypedEvents)  # an op's input lists as raw JSON text
        op_rows, kernel_rows, names, kernel_row = self.op_rows, self.kernel_rows, self._names, self._kernel_row
        op_values = self._op_values_raw if raw else self._op_values
        shared = self._shared_raw if raw else self._shared
        first = self.first_us
        for e in events:
            if e.get("ph") != "X":
                continue
            self.events += 1
            cat = e.get("cat")
            try:
                ts = float(e.get("ts"))  # None, "yesterday", a list: no start time
            except (TypeError, ValueError):
                self.undated += 1
                continue
            if ts < first:
                first = ts
            args = e.get("args") or _NO_ARGS
            if cat in OP_CATEGORIES:
                row = op_values(e, args)
                name = row[_NAME] = names.setdefault(row[_NAME], row[_NAME])
                row[_CATEGORY] = "user_annotation" if name.startswith(SCOPE_PREFIXES) else \
                    names.setdefault(row[_CATEGORY], row[_CATEGORY])
                row[_TID] = _int(row[_TID])
                row[_TS] = ts  # microseconds until finish()
                row[_INPUTS:_INPUTS + 4] = shared(tuple(row[_INPUTS:_INPUTS + 4]))
                kept = _NO_ARGS if KEPT_OP_ARG_SET.isdisjoint(args) else {k: args[k] for k in KEPT_OP_ARGS if k in args}
                op_rows.append((*row, _NO_LIST, _NO_LIST, kept, _int(args.get("Sequence number", -1), -1)))
            elif cat in KERNEL_CATEGORIES:
                kernel_rows.append(kernel_row(e, args, ts))
            elif cat in LAUNCH_CATEGORIES and "correlation" in args:
                self._runtime_call(e, args, ts)
        self.first_us = first
        if self.records:  # this chunk's rows made records now: rows and records are never all held at once
            self.ops += starmap(RawOp, op_rows)
            self.kernels += starmap(RawKernel, kernel_rows)
            op_rows.clear()
            kernel_rows.clear()

    def _kernel_row(self, e: Any, args: Any, ts: float) -> tuple[Any, ...]:
        """A device activity's RawKernel fields, in order: the spec's values, with names stored
        once, launch dimensions as shared tuples and sizes as ints (None where the trace has none)."""
        row = self._kernel_values(e, args)
        names, triple = self._names, self._triple
        row[_K_NAME] = names.setdefault(row[_K_NAME], row[_K_NAME])
        row[_K_CATEGORY] = names.setdefault(row[_K_CATEGORY], row[_K_CATEGORY])
        row[_K_TS] = ts
        row[_K_DEVICE] = row[_K_DEVICE] or 0
        row[_K_STREAM] = row[_K_STREAM] or 0
        row[_K_GRID] = triple(row[_K_GRID])
        row[_K_BLOCK] = triple(row[_K_BLOCK])
        size = row[_K_BYTES]
        row[_K_BYTES] = int(size) if isinstance(size, (int, float)) else None
        shared_memory = row[_K_SHARED]
        row[_K_SHARED] = self._number(int(shared_memory)) if isinstance(shared_memory, (int, float)) else None
        row[_K_REGISTERS] = _count(row[_K_REGISTERS])
        return tuple(row)

    def _runtime_call(self, e: Any, args: Any, ts: float) -> None:
        """A runtime or driver call that names a correlation id: its launch time, and whether it
        begins a graph capture, launches a graph or makes the host wait (a sync)."""
        correlation = int(args["correlation"])
        self.launch_us[correlation] = ts
        name = self._names.setdefault(e.get("name", ""), e.get("name", ""))
        self.runtime_calls.append((_int(e.get("tid", 0)), ts, name, _int(args.get("External id", -1), -1)))
        if name.startswith("cudaStreamBeginCapture"):
            self.capture_calls += 1
        if name.startswith(GRAPH_LAUNCH_CALLS):
            self.graph_launches.append(correlation)
        if name in SYNC_CALLS:
            self.syncs.append(RawSync(name, ts, e.get("dur", 0), _int(args.get("External id", -1), -1),
                                      _int(e.get("tid", 0))))

    def finish(self, top: dict[str, Any] | None = None) -> RawTrace:
        """Times to integer ns from the first event; ops by (thread, start, longest first)."""
        self.ops += starmap(RawOp, self.op_rows)  # rows not made records yet (records=False)
        self.kernels += starmap(RawKernel, self.kernel_rows)
        self.op_rows, self.kernel_rows = [], []
        _check_dated(self.undated, self.events)
        base = self.first_us if self.first_us != math.inf else 0.0
        for records in (self.ops, self.kernels, self.syncs):
            starts = ns_from(list(map(attrgetter("ts_ns"), records)), base)
            durations = _durations_ns(list(map(attrgetter("dur_ns"), records)))
            for record, start, duration in zip(records, starts, durations):
                record.ts_ns, record.dur_ns = start, duration
        self.ops.sort(key=lambda o: (o.tid, o.ts_ns, -o.dur_ns))
        self.kernels.sort(key=attrgetter("ts_ns", "correlation"))
        self.syncs.sort(key=attrgetter("ts_ns"))
        launches = dict(zip(self.launch_us, ns_from(list(self.launch_us.values()), base)))
        # graph_captures from the runtime calls, only when the run captured a CUDA graph
        captures = _graph_captures(self.runtime_calls) if self.capture_calls else []
        self.runtime_calls = []
        return RawTrace(ops=self.ops, kernels=self.kernels, launch_ts_ns=launches, graph_launches=self.graph_launches,
                        graph_captures=captures, syncs=self.syncs, distributed=_distributed(top),
                        device_properties=device_properties((top or {}).get("deviceProperties")),
                        origin_ns=trace_origin_ns(base, top))


# A time beyond this many microseconds (about 290 years) is no time a profiler recorded: it would
# not fit the int64 nanoseconds the records keep.
MAX_TRACE_US = 9e15


def _check_dated(undated: int, events: int) -> None:
    """An event without a start time cannot be placed: a trace with such events is damaged and
    is said so, never read with them dropped in silence."""
    if undated:
        raise TraceFormatError(f"{undated} of the trace's {events} complete events have no usable start time "
                               "(ts): the trace is damaged.")


def _durations_ns(durations_us: list[Any]) -> list[int]:
    """Durations (microseconds) as int nanoseconds; refused when one is not a number, negative,
    or longer than MAX_TRACE_US."""
    import numpy as np

    try:
        values = np.asarray([0.0 if d is None else d for d in durations_us], dtype=np.float64)
    except (TypeError, ValueError):
        raise TraceFormatError("the trace has an event whose duration (dur) is not a number.") from None
    bad = ~np.isfinite(values) | (values < 0) | (values > MAX_TRACE_US)
    if bad.any():
        raise TraceFormatError(f"{int(bad.sum())} of the trace's events have a negative, infinite or impossible "
                               f"duration (e.g. dur {values[bad][0]:g} us): the trace is damaged.")
    return ns_from(values.tolist(), 0.0)


def trace_origin_ns(first_us: float, top: dict[str, Any] | None) -> int:
    """The profiler clock's time (ns since the epoch) of the trace's first event."""
    return int((top or {}).get("baseTimeNanoseconds", 0) or 0) + int(round(first_us * 1000.0))


def ns_from(times_us: list[float], base_us: float) -> list[int]:
    """int(round((t - base_us) * 1000.0)) for each time, computed in numpy: the same IEEE double
    arithmetic, and rint rounds half to even as round does (a million records: no Python loop)."""
    import numpy as np

    times = np.asarray(times_us, dtype=np.float64)
    if len(times) and not (np.isfinite(times).all() and np.abs(times - base_us).max() <= MAX_TRACE_US):
        raise TraceFormatError("the trace has a start time (ts) that is infinite or centuries away from the "
                               "others: the trace is damaged.")
    return np.rint((times - base_us) * 1000.0).astype(np.int64).tolist()


def _distributed(top: dict[str, Any] | None) -> dict[str, Any]:
    """The trace's distributedInfo (backend, rank, world_size), {} when it has none."""
    found = (top or {}).get("distributedInfo")
    return dict(found) if isinstance(found, dict) else {}

