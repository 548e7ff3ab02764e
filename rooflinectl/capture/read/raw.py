"""The raw events of one profiled run, in our own small form: what capture hands on.

- ops: CPU ops (`cpu_op`) and annotations (`user_annotation`: our regions and module scopes),
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
Times are integer nanoseconds from the trace's first event. The records know nothing of the
trace file they came from: the reader (builder.py, after spec.py) makes them, and the capture
file (`--save-capture`) stores them column by column (to_json, from_json).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rooflinectl.capture.read.chrome_json import encode_json
from rooflinectl.capture.read.columns import from_columns, to_columns

if TYPE_CHECKING:
    import numpy as np
# numpy is imported where it is used: the reading workers (capture/read/trace_parallel.py) import this
# module and never need it, and on a many-core machine importing numpy started a BLAS thread pool
# in each of them (2.2 s of CPU per worker on the H200's 16 cores, against a 0.15 s range).


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
    args: dict[str, Any] = field(default_factory=dict)  # Inductor's or a collective's (spec.KEPT_OP_ARGS)
    sequence_nr: int = -1  # autograd sequence number: a backward op shares its forward op's (-1: none)
    # the tensors the op read and wrote, [identity, bytes, ...] each (capture/run/tensor_accesses.py)
    tensor_reads: list[int] = field(default_factory=list)
    tensor_writes: list[int] = field(default_factory=list)

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
    compiled_kernels: dict[str, Any] = field(default_factory=dict)  # capture/run/inductor.py: C++ kernels' buffers
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
            device_properties=device_properties(data.get("device_properties")),
            origin_ns=int(data.get("origin_ns", 0)),
        )


def input_signature(lists: Any) -> Any:
    """A hashable key equal for equal input lists (any JSON values; fast with orjson)."""
    try:
        return encode_json(lists)
    except (TypeError, ValueError):  # not JSON data at all
        return repr(lists)


def share_input_lists(ops: list[RawOp]) -> None:
    """Ops recorded with equal inputs made to share one copy of the input lists (as the reader
    makes them): memory, and attribution costs each distinct call once."""
    seen: dict[Any, tuple[list[Any], ...]] = {}
    for op in ops:
        lists = (op.input_dims, op.input_types, op.input_strides, op.concrete_inputs)
        op.input_dims, op.input_types, op.input_strides, op.concrete_inputs = seen.setdefault(
            input_signature(lists), lists)


def device_properties(found: Any) -> list[dict[str, Any]]:
    """The GPUs' properties as the trace lists them ([] when it has none or they are not a list
    of objects: a trace is data, and an odd one still reads)."""
    return [dict(p) for p in found if isinstance(p, dict)] if isinstance(found, list) else []
