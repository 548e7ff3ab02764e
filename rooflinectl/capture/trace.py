"""Raw events of one profiled run, in our own small form, parsed from torch.profiler's trace.

We read the Chrome-trace JSON that torch.profiler exports (stable across versions, the same
file HTA and TensorBoard read) and keep what later stages need:
- ops: CPU ops (`cpu_op`) and annotations (`user_annotation`: our regions and module scopes,
  whichever category the profiler gave a scope: see MODULE_PREFIX),
  with input dims, strides, types, concrete values and, when the profiler's event tree gave them,
  storage pointers and dtypes of tensor-list elements; the op Inductor names after each kernel
  it launches keeps Inductor's args (its cost estimate, kernel file), and `record_param_comms`
  (the op that launches a collective) the collective's (name, element counts, group, dtype);
- kernels: device activity (`kernel`, `gpu_memcpy`, `gpu_memset`) with the External id of the CPU
  op active at launch (its innermost op), grid and block;
- launches: runtime launch calls (`cuda_runtime`/`cuda_driver`) by correlation id, for timing;
- graph_captures: per CUDA-graph stream capture, the device work launched into it, in order
  (kind and External id of the launching op): a replayed kernel names no op of its own.
- syncs: runtime calls that block the host until the device is done (stream/device/event
  synchronise, synchronous memcpy), with the External id of the op that made them.
Times are integer nanoseconds from the trace's first event.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from itertools import starmap
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rooflinectl.capture.chrome_json import (
    TraceFormatError,
    decode_json,
    encode_json,
    gc_paused,
    read_events,
)
from rooflinectl.capture.columns import from_columns, to_columns
from rooflinectl.capture.typed_events import TypedEvents, make_decoder, raw_json

if TYPE_CHECKING:
    import numpy as np
# numpy is imported where it is used: the reading workers (capture/trace_parallel.py) import this
# module and never need it, and on a many-core machine importing numpy started a BLAS thread pool
# in each of them (2.2 s of CPU per worker on the H200's 16 cores, against a 0.15 s range).

KERNEL_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")
OP_CATEGORIES = ("cpu_op", "user_annotation")
# nn.Module scopes (capture/modules.py) are named with this prefix. They are recorded as
# `user_annotation` by torch.profiler.record_function, and as `cpu_op` by the cheaper
# `_RecordFunctionFast` that capture uses now: the parser makes both `user_annotation`, so that
# old and new traces read the same and a scope is never taken for an op that does work.
MODULE_PREFIX = "rooflinectl.module:"
# The user's source line of a torch call (capture/source_lines.py): recorded the same way, read the same way.
SOURCE_PREFIX = "rooflinectl.src:"
_SCOPE_PREFIXES = (MODULE_PREFIX, SOURCE_PREFIX)
LAUNCH_CATEGORIES = ("cuda_runtime", "cuda_driver")
# What Inductor puts in the args of the op named after each kernel it launches (benchmark_kernel on).
INDUCTOR_ARGS = ("kernel_num_gb", "kernel_flop", "kernel_name", "kernel_file", "kernel_backend", "kernel_kwargs")
# Runtime and driver calls that make the host wait for the device (cudaMemcpy without Async is
# synchronous; .item(), .cpu() and print(tensor) show up as cudaStreamSynchronize).
SYNC_CALLS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy",
              "cudaMemcpy2D", "cuStreamSynchronize", "cuCtxSynchronize", "cuEventSynchronize", "cuMemcpyDtoH_v2",
              "cuMemcpyHtoD_v2")
# What torch.distributed puts in the args of `record_param_comms`, the op that launches a collective.
COLLECTIVE_ARGS = ("Collective name", "In msg nelems", "Out msg nelems", "Group size", "dtype",
                   "Process Group Name", "Process Group Ranks", "In split size", "Out split size")
KEPT_OP_ARGS = INDUCTOR_ARGS + COLLECTIVE_ARGS
_KEPT_OP_ARGS = frozenset(KEPT_OP_ARGS)  # most ops have none of them: one set test says so


@dataclass(slots=True)
class RawOp:
    """One CPU op or annotation from the profiler trace, as recorded: the inputs the cost model
    reads (dims, types, strides, scalar values, storages) and the External id its kernels cite."""

    external_id: int
    name: str
    category: str  # cpu_op or user_annotation
    tid: int
    ts_ns: int
    dur_ns: int
    input_dims: list[Any] = field(default_factory=list)
    input_types: list[str] = field(default_factory=list)
    input_strides: list[Any] = field(default_factory=list)
    concrete_inputs: list[Any] = field(default_factory=list)
    input_storages: list[Any] = field(default_factory=list)  # int | list[int] | None per input
    list_dtypes: list[Any] = field(default_factory=list)  # torch dtype names of tensor-list elements
    args: dict[str, Any] = field(default_factory=dict)  # Inductor's (INDUCTOR_ARGS) or a collective's (COLLECTIVE_ARGS)
    sequence_nr: int = -1  # autograd sequence number: a backward op shares its forward op's (-1: none)

    @property
    def end_ns(self) -> int:
        return self.ts_ns + self.dur_ns


@dataclass(slots=True)
class RawKernel:
    """One device activity (kernel, memcpy or memset) with the ids that link it to its launching op."""

    name: str
    category: str  # kernel, gpu_memcpy, gpu_memset
    ts_ns: int
    dur_ns: int
    external_id: int
    correlation: int
    device: int = 0
    stream: int = 0
    grid: tuple[int, int, int] | None = None
    block: tuple[int, int, int] | None = None
    bytes: int | None = None  # memcpy/memset size, as the trace records it
    shared_memory: int | None = None  # bytes per block (static + dynamic), part of the launch config
    registers_per_thread: int | None = None  # as the compiled kernel uses them (occupancy depends on it)

    @property
    def end_ns(self) -> int:
        return self.ts_ns + self.dur_ns


@dataclass
class RawSync:
    """One host-blocking runtime call: the host waited here until the device drained."""

    name: str
    ts_ns: int
    dur_ns: int
    external_id: int  # the op active when it was called (-1: called outside any op)
    tid: int = 0


@dataclass
class RawTrace:
    """What capture hands on: the raw events of a run, knowing nothing of costs or rooflines.

    Saved as the capture file (`--save-capture`), so attribution can be re-run without the GPU.
    """

    ops: list[RawOp]
    kernels: list[RawKernel]
    launch_ts_ns: dict[int, int]  # correlation id -> launch call start
    triton_launches: list[dict[str, Any]] = field(default_factory=list)  # name + launch_metadata
    graph_launches: list[int] = field(default_factory=list)  # correlation ids of cudaGraphLaunch calls
    compiled_kernels: dict[str, Any] = field(default_factory=dict)  # capture/inductor.py: C++ kernels' buffers
    graph_captures: list[list[tuple[str, int]]] = field(default_factory=list)  # (kernel|memset|memcpy, External id)
    syncs: list[RawSync] = field(default_factory=list)
    distributed: dict[str, Any] = field(default_factory=dict)  # the trace's distributedInfo: backend, rank, world_size
    # the trace's deviceProperties (name, computeMajor/Minor, numSms, totalGlobalMem per GPU id):
    # what GPU the run had, for analysing a saved trace on another machine (cli/analyse_cmd.py)
    device_properties: list[dict[str, Any]] = field(default_factory=list)
    origin_ns: int = 0  # the profiler clock's time (ns since the epoch) of ts_ns == 0
    _op_times: Any = field(default=None, init=False, repr=False, compare=False)

    def op_times_ns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(start, end, is a cpu_op) of every op, in ops' order, as arrays: made once per list of
        ops (several analyses ask; a million ops cost a Python loop each time)."""
        if self._op_times is None or self._op_times[0] is not self.ops or len(self._op_times[1][0]) != len(self.ops):
            import numpy as np

            starts = np.fromiter((o.ts_ns for o in self.ops), dtype=np.int64, count=len(self.ops))
            durations = np.fromiter((o.dur_ns for o in self.ops), dtype=np.int64, count=len(self.ops))
            cpu = np.fromiter((o.category == "cpu_op" for o in self.ops), dtype=bool, count=len(self.ops))
            self._op_times = (self.ops, (starts, starts + durations, cpu))
        return self._op_times[1]

    def to_json(self) -> dict[str, Any]:
        """Plain data for the capture file, column by column: each field of the records as one
        list, and text and list fields as a table of distinct values plus one index per record
        (a million launches of a few kernels store each name once, and load back sharing it)."""
        return {
            "layout": "columns",
            "ops": to_columns(self.ops, RawOp),
            "kernels": to_columns(self.kernels, RawKernel),
            "launch_ts_ns": {"correlation": list(self.launch_ts_ns), "ts_ns": list(self.launch_ts_ns.values())},
            "graph_launches": self.graph_launches,
            "triton_launches": self.triton_launches,
            "compiled_kernels": self.compiled_kernels,
            "graph_captures": [[list(item) for item in capture] for capture in self.graph_captures],
            "syncs": to_columns(self.syncs, RawSync),
            "distributed": self.distributed,
            "device_properties": self.device_properties,
            "origin_ns": self.origin_ns,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RawTrace:
        """Read to_json's data (and the earlier layout: one dict per record)."""
        if data.get("layout") == "columns":
            ops = from_columns(data["ops"], RawOp)
            kernels = from_columns(data["kernels"], RawKernel)
            launches = data.get("launch_ts_ns") or {"correlation": [], "ts_ns": []}
            launch_ts_ns = dict(zip(launches["correlation"], launches["ts_ns"]))
        else:
            ops = [RawOp(**o) for o in data["ops"]]
            share_input_lists(ops)
            kernels = [RawKernel(**k) for k in data["kernels"]]
            launch_ts_ns = {int(k): int(v) for k, v in data.get("launch_ts_ns", {}).items()}
        for k in kernels:  # JSON has no tuples
            k.grid = tuple(k.grid) if k.grid else None
            k.block = tuple(k.block) if k.block else None
        return cls(
            ops=ops,
            kernels=kernels,
            launch_ts_ns=launch_ts_ns,
            graph_launches=[int(c) for c in data.get("graph_launches", [])],
            triton_launches=list(data.get("triton_launches", [])),
            compiled_kernels=dict(data.get("compiled_kernels", {})),
            graph_captures=[[(str(kind), int(ext)) for kind, ext in capture] for capture in data.get("graph_captures", [])],
            syncs=(from_columns(data["syncs"], RawSync) if isinstance(data.get("syncs"), dict)
                   else [RawSync(**s) for s in data.get("syncs", [])]),
            distributed=dict(data.get("distributed") or {}),
            device_properties=_device_properties(data.get("device_properties")),
            origin_ns=int(data.get("origin_ns", 0)),
        )


# The declarative spec: which events become which records, and each record field's source in an
# event ("args.X" is key X of the event's args) with its default when the key is missing. Add a
# field here (and to the record's dataclass) to carry one more raw key through to attribution.
Source = tuple[str, str, Any]  # (field, key in the event, default)

OP_FIELDS: tuple[Source, ...] = (
    ("external_id", "args.External id", -1),
    ("name", "name", ""),
    ("category", "cat", ""),
    ("tid", "tid", 0),
    ("ts_ns", "ts", 0.0),  # microseconds until the trace is finished, then ns from its start
    ("dur_ns", "dur", 0.0),
    # the four input lists are shared by all ops recorded with the same inputs (see _intern)
    ("input_dims", "args.Input Dims", []),
    ("input_types", "args.Input type", []),
    ("input_strides", "args.Input Strides", []),
    ("concrete_inputs", "args.Concrete Inputs", []),
)
KERNEL_FIELDS: tuple[Source, ...] = (
    ("name", "name", ""),
    ("category", "cat", ""),
    ("ts_ns", "ts", 0.0),
    ("dur_ns", "dur", 0.0),
    ("external_id", "args.External id", -1),
    ("correlation", "args.correlation", -1),
    ("device", "args.device", 0),
    ("stream", "args.stream", 0),
    ("grid", "args.grid", None),
    ("block", "args.block", None),
    ("bytes", "args.bytes", None),
    ("shared_memory", "args.shared memory", None),
    ("registers_per_thread", "args.registers per thread", None),
)
GRAPH_LAUNCH_CALLS = ("cudaGraphLaunch", "cuGraphLaunch")

# Records are built positionally from the spec (fast): its fields must lead the dataclass, in order;
# an op's record ends with the fields the spec does not read (the builder fills them itself).
_OP_TAIL = ("input_storages", "list_dtypes", "args", "sequence_nr")
for _spec, _record, _tail in ((OP_FIELDS, RawOp, _OP_TAIL), (KERNEL_FIELDS, RawKernel, ())):
    if [name for name, _, _ in _spec] + list(_tail) != [f.name for f in fields(_record)]:
        raise TypeError(f"the spec of {_record.__name__} must list its first fields in order")
# Where the builder fixes a spec value in place (positions in the spec, so a new field moves none).
_OP_AT = {name: i for i, (name, _, _) in enumerate(OP_FIELDS)}
_K_AT = {name: i for i, (name, _, _) in enumerate(KERNEL_FIELDS)}
_NAME, _CATEGORY, _TID, _TS, _INPUTS = (_OP_AT[n] for n in ("name", "category", "tid", "ts_ns", "input_dims"))
if [f for f, _, _ in OP_FIELDS[_INPUTS:_INPUTS + 4]] != ["input_dims", "input_types", "input_strides", "concrete_inputs"]:
    raise TypeError("the spec of RawOp must list the four input lists together (they are shared as one)")
(_K_NAME, _K_CATEGORY, _K_TS, _K_DEVICE, _K_STREAM, _K_GRID, _K_BLOCK, _K_BYTES, _K_SHARED,
 _K_REGISTERS) = (_K_AT[n] for n in ("name", "category", "ts_ns", "device", "stream", "grid", "block", "bytes",
                                      "shared_memory", "registers_per_thread"))


# The keys of an event itself that the builder reads (a typed event keeps these alone).
EVENT_KEYS = ("ph", "cat", "ts", "name", "tid", "dur", "args")
# An op's input lists: a typed event (capture/typed_events.py) keeps them as raw JSON text, which
# the builder decodes once per distinct text.
RAW_ARGS = ("Input Dims", "Input type", "Input Strides", "Concrete Inputs")
if any(not key.startswith("args.") and key not in EVENT_KEYS for _, key, _ in OP_FIELDS + KERNEL_FIELDS):
    raise TypeError("every key of an event that the spec reads must be in EVENT_KEYS")
ARG_KEYS = tuple(dict.fromkeys(
    [key.removeprefix("args.") for _, key, _ in OP_FIELDS + KERNEL_FIELDS if key.startswith("args.")]
    + ["External id", "correlation", "Sequence number", *KEPT_OP_ARGS]))


def _getter(fields: tuple[Source, ...], raw_inputs: bool = False) -> Callable[[dict[str, Any], dict[str, Any]], list[Any]]:
    """A function (event, args) -> the fields' raw values in order: the spec compiled once, into
    one list display of .get calls (as dataclasses compiles its __init__): a loop over the spec
    per event cost a third of reading a trace. Keys and defaults are passed in, never written
    into the source. raw_inputs: for typed events, whose RAW_ARGS are raw JSON text (and so are
    their defaults here)."""
    names: dict[str, Any] = {}
    items = []
    for i, (_, key, default) in enumerate(fields):
        arg = key.removeprefix("args.")
        names[f"key{i}"] = arg
        names[f"default{i}"] = raw_json(default) if raw_inputs and arg in RAW_ARGS else default
        items.append(f"{'args' if key.startswith('args.') else 'event'}.get(key{i}, default{i})")
    source = f"def get(event, args):\n    return [{', '.join(items)}]\n"
    exec(compile(source, f"<getter of {len(fields)} fields>", "exec"), names)  # noqa: S102 - our own spec
    return names["get"]


# A JSON array of trace events decoded for TraceBuilder.add: TypedEvents when msgspec is installed
# and the events fit (capture/typed_events.py), else a list of dicts. ValueError if not JSON.
decode_events: Callable[[bytes], list[Any]] = make_decoder(
    EVENT_KEYS, [k for k in ARG_KEYS if k not in RAW_ARGS], RAW_ARGS, decode_json) or decode_json


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


def _signature_bytes(values: Any) -> Any:
    """A hashable key equal for equal JSON values (fast with orjson)."""
    try:
        return encode_json(values)
    except (TypeError, ValueError):  # not JSON data at all
        return repr(values)


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
    (capture/trace_parallel.py) sends its rows on as columns and never makes the records. Names,
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
        self._op_values = _getter(OP_FIELDS)
        self._op_values_raw = _getter(OP_FIELDS, raw_inputs=True)
        self._kernel_values = _getter(KERNEL_FIELDS)
        self._inputs: dict[Any, tuple[list[Any], ...]] = {}
        self._raw_inputs: dict[bytes, tuple[list[Any], ...]] = {}  # raw JSON text -> shared lists
        self._names: dict[str, str] = {}
        self._triples: dict[tuple[Any, ...], tuple[int, int, int] | None] = {}
        self._numbers: dict[int, int] = {}

    def _shared(self, lists: tuple[list[Any], ...]) -> tuple[list[Any], ...]:
        """The shared copy of an op's four input lists (dims, types, strides, concrete values)."""
        return self._inputs.setdefault(_signature_bytes(lists), lists)

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
        op_rows, kernel_rows, launch_us, names = self.op_rows, self.kernel_rows, self.launch_us, self._names
        op_values = self._op_values_raw if raw else self._op_values
        kernel_values, shared, triple = self._kernel_values, self._shared_raw if raw else self._shared, self._triple
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
                row[_CATEGORY] = "user_annotation" if name.startswith(_SCOPE_PREFIXES) else \
                    names.setdefault(row[_CATEGORY], row[_CATEGORY])
                row[_TID] = _int(row[_TID])
                row[_TS] = ts  # microseconds until finish()
                row[_INPUTS:_INPUTS + 4] = shared(tuple(row[_INPUTS:_INPUTS + 4]))
                kept = _NO_ARGS if _KEPT_OP_ARGS.isdisjoint(args) else {k: args[k] for k in KEPT_OP_ARGS if k in args}
                op_rows.append((*row, _NO_LIST, _NO_LIST, kept, _int(args.get("Sequence number", -1), -1)))
            elif cat in KERNEL_CATEGORIES:
                row = kernel_values(e, args)
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
                kernel_rows.append(tuple(row))
            elif cat in LAUNCH_CATEGORIES and "correlation" in args:
                correlation = int(args["correlation"])
                launch_us[correlation] = ts
                name = names.setdefault(e.get("name", ""), e.get("name", ""))
                self.runtime_calls.append((_int(e.get("tid", 0)), ts, name, _int(args.get("External id", -1), -1)))
                if name.startswith("cudaStreamBeginCapture"):
                    self.capture_calls += 1
                if name.startswith(GRAPH_LAUNCH_CALLS):
                    self.graph_launches.append(correlation)
                if name in SYNC_CALLS:
                    self.syncs.append(RawSync(name, ts, e.get("dur", 0), _int(args.get("External id", -1), -1),
                                              _int(e.get("tid", 0))))
        self.first_us = first
        if self.records:  # this chunk's rows made records now: rows and records are never all held at once
            self.ops += starmap(RawOp, op_rows)
            self.kernels += starmap(RawKernel, kernel_rows)
            op_rows.clear()
            kernel_rows.clear()

    def finish(self, top: dict[str, Any] | None = None) -> RawTrace:
        """Times to integer ns from the first event; ops by (thread, start, longest first)."""
        self.ops += starmap(RawOp, self.op_rows)  # rows not made records yet (records=False)
        self.kernels += starmap(RawKernel, self.kernel_rows)
        self.op_rows, self.kernel_rows = [], []
        _check_dated(self.undated, self.events)
        base = self.first_us if self.first_us != math.inf else 0.0
        for records in (self.ops, self.kernels, self.syncs):
            starts = _ns_from(list(map(attrgetter("ts_ns"), records)), base)
            durations = _durations_ns(list(map(attrgetter("dur_ns"), records)))
            for record, start, duration in zip(records, starts, durations):
                record.ts_ns, record.dur_ns = start, duration
        self.ops.sort(key=lambda o: (o.tid, o.ts_ns, -o.dur_ns))
        self.kernels.sort(key=attrgetter("ts_ns", "correlation"))
        self.syncs.sort(key=attrgetter("ts_ns"))
        launches = dict(zip(self.launch_us, _ns_from(list(self.launch_us.values()), base)))
        # graph_captures from the runtime calls, only when the run captured a CUDA graph
        captures = _graph_captures(self.runtime_calls) if self.capture_calls else []
        self.runtime_calls = []
        return RawTrace(ops=self.ops, kernels=self.kernels, launch_ts_ns=launches, graph_launches=self.graph_launches,
                        graph_captures=captures, syncs=self.syncs, distributed=_distributed(top),
                        device_properties=_device_properties((top or {}).get("deviceProperties")),
                        origin_ns=_origin_ns(base, top))


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
    return _ns_from(values.tolist(), 0.0)


def _origin_ns(first_us: float, top: dict[str, Any] | None) -> int:
    """The profiler clock's time (ns since the epoch) of the trace's first event."""
    return int((top or {}).get("baseTimeNanoseconds", 0) or 0) + int(round(first_us * 1000.0))


def _ns_from(times_us: list[float], base_us: float) -> list[int]:
    """int(round((t - base_us) * 1000.0)) for each time, computed in numpy: the same IEEE double
    arithmetic, and rint rounds half to even as round does (a million records: no Python loop)."""
    import numpy as np

    times = np.asarray(times_us, dtype=np.float64)
    if len(times) and not (np.isfinite(times).all() and np.abs(times - base_us).max() <= MAX_TRACE_US):
        raise TraceFormatError("the trace has a start time (ts) that is infinite or centuries away from the "
                               "others: the trace is damaged.")
    return np.rint((times - base_us) * 1000.0).astype(np.int64).tolist()


def _device_properties(found: Any) -> list[dict[str, Any]]:
    """The GPUs' properties as the trace lists them ([] when it has none or they are not a list
    of objects: a trace is data, and an odd one still reads)."""
    return [dict(p) for p in found if isinstance(p, dict)] if isinstance(found, list) else []


def _distributed(top: dict[str, Any] | None) -> dict[str, Any]:
    """The trace's distributedInfo (backend, rank, world_size), {} when it has none."""
    found = (top or {}).get("distributedInfo")
    return dict(found) if isinstance(found, dict) else {}


def share_input_lists(ops: list[RawOp]) -> None:
    """Ops recorded with equal inputs made to share one copy of the input lists (as read_chrome_trace
    makes them): memory, and attribution costs each distinct call once."""
    builder = TraceBuilder()
    for op in ops:
        builder._share_inputs(op)


def from_chrome_trace(trace: dict[str, Any], tensor_info: dict[tuple[str, int], dict[str, Any]] | None = None) -> RawTrace:
    """Parse an exported torch.profiler Chrome trace already decoded into a dict.

    tensor_info maps (op name, start time in ns of the profiler's clock) to {"storages": [...],
    "list_dtypes": [...], "list_dims": [...]} from the profiler's event tree (add_tensor_info).
    """
    builder = TraceBuilder()
    builder.add(trace.get("traceEvents", []) or [])
    raw = builder.finish(trace)
    if tensor_info:
        add_tensor_info(raw, tensor_info)
    return raw


def read_chrome_trace(path: str | Path, meanwhile: Callable[[], None] | None = None,
                      before_join: Callable[[list[int]], None] | None = None) -> RawTrace:
    """Parse a Chrome trace file (JSON, or gzipped JSON) in bounded memory: streamed in chunks,
    or for a large file on a machine with spare cores, by several processes at once
    (capture/trace_parallel.py; the same records). meanwhile: work of the caller's to do while
    the workers read (its imports, say), once; before reading when the file is read here.
    before_join: see read_parallel; called only when the workers read the file."""
    from rooflinectl.capture.trace_parallel import read_parallel, worker_count

    try:
        workers = worker_count(os.path.getsize(path))
    except OSError:
        workers = 0
    once = functools.cache(meanwhile) if meanwhile is not None else (lambda: None)  # a second call does nothing
    if workers >= 2:
        trace = read_parallel(path, workers, once, before_join)
        if trace is not None:
            return trace
    once()  # here if the workers did not run it (or could not read the file)
    top, chunks = read_events(path, decode_events)
    builder = TraceBuilder()
    with gc_paused():
        for events in chunks:
            builder.add(events)
        return builder.finish(top)


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
    return [row[_TS] for row in op_rows
            if _may_share_an_input(verdicts, row[_CATEGORY], row[_INPUTS], row[_INPUTS + 1], row[_INPUTS + 2])]


def profiler_times_us(times_us: list[float], first_us: float, top: dict[str, Any] | None) -> list[int]:
    """Trace times (microseconds, as recorded) as whole microseconds of the profiler's clock, with
    the arithmetic TraceBuilder.finish gives the ops: (origin_ns + ts_ns) // 1000."""
    if not times_us:
        return []
    origin_ns = _origin_ns(first_us, top)
    return [(origin_ns + t) // 1000 for t in _ns_from(times_us, first_us)]


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
