"""Raw events of one profiled run, in our own small form, parsed from torch.profiler's trace.

We read the Chrome-trace JSON that torch.profiler exports (stable across versions, the same
file HTA and TensorBoard read) and keep what later stages need:
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
Times are integer nanoseconds from the trace's first event.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

KERNEL_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")
OP_CATEGORIES = ("cpu_op", "user_annotation")
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


@dataclass
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


@dataclass
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

    def to_json(self) -> dict[str, Any]:
        return {
            "ops": [asdict(o) for o in self.ops],
            "kernels": [asdict(k) for k in self.kernels],
            "launch_ts_ns": {str(k): v for k, v in self.launch_ts_ns.items()},
            "graph_launches": self.graph_launches,
            "triton_launches": self.triton_launches,
            "compiled_kernels": self.compiled_kernels,
            "graph_captures": [[list(item) for item in capture] for capture in self.graph_captures],
            "syncs": [asdict(s) for s in self.syncs],
            "distributed": self.distributed,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RawTrace:
        kernels = []
        for k in data["kernels"]:
            k = dict(k)
            k["grid"] = tuple(k["grid"]) if k.get("grid") else None
            k["block"] = tuple(k["block"]) if k.get("block") else None
            kernels.append(RawKernel(**k))
        return cls(
            ops=[RawOp(**o) for o in data["ops"]],
            kernels=kernels,
            launch_ts_ns={int(k): int(v) for k, v in data.get("launch_ts_ns", {}).items()},
            graph_launches=[int(c) for c in data.get("graph_launches", [])],
            triton_launches=list(data.get("triton_launches", [])),
            compiled_kernels=dict(data.get("compiled_kernels", {})),
            graph_captures=[[(str(kind), int(ext)) for kind, ext in capture] for capture in data.get("graph_captures", [])],
            syncs=[RawSync(**s) for s in data.get("syncs", [])],
            distributed=dict(data.get("distributed") or {}),
        )


def _ns(us: float, base_us: float) -> int:
    return int(round((float(us) - base_us) * 1000.0))


def _tid(event: dict[str, Any]) -> int:
    """The event's thread id; 0 when missing or not a number (kineto writes names for some)."""
    value = event.get("tid", 0)
    return int(value) if str(value).lstrip("-").isdigit() else 0


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


def _fill_list_dims(op: RawOp, list_dims: list[Any]) -> None:
    """Tensor-list shapes from the event tree where the Chrome trace left them out (it records
    none for a list of more than 30 tensors, such as an optimizer's parameter list)."""
    for i, dims in enumerate(list_dims):
        if dims and i < len(op.input_types) and op.input_types[i] == "TensorList" and i < len(op.input_dims) \
                and not op.input_dims[i]:
            op.input_dims[i] = dims


def from_chrome_trace(trace: dict[str, Any], tensor_info: dict[tuple[str, int], dict[str, Any]] | None = None) -> RawTrace:
    """Parse an exported torch.profiler Chrome trace.

    tensor_info maps (op name, start time in whole microseconds since the epoch of the trace's
    clock) to {"storages": [...], "list_dtypes": [...]} from the profiler's event tree.
    """
    events = [e for e in trace.get("traceEvents", []) if e.get("ph") == "X"]
    timed = [float(e["ts"]) for e in events if "ts" in e]
    base_us = min(timed) if timed else 0.0
    base_ns_epoch = int(trace.get("baseTimeNanoseconds", 0))
    ops: list[RawOp] = []
    kernels: list[RawKernel] = []
    launches: dict[int, int] = {}
    graph_launches: list[int] = []
    runtime_calls: list[tuple[int, int, str, int]] = []
    syncs: list[RawSync] = []
    for e in events:
        cat = e.get("cat", "")
        args = e.get("args", {}) or {}
        if cat in OP_CATEGORIES:
            op = RawOp(
                external_id=int(args.get("External id", -1)),
                name=str(e.get("name", "")),
                category=cat,
                tid=_tid(e),
                ts_ns=_ns(e["ts"], base_us),
                dur_ns=int(round(float(e.get("dur", 0)) * 1000.0)),
                input_dims=list(args.get("Input Dims", [])),
                input_types=[str(t) for t in args.get("Input type", [])],
                input_strides=list(args.get("Input Strides", [])),
                concrete_inputs=list(args.get("Concrete Inputs", [])),
                args={k: args[k] for k in KEPT_OP_ARGS if k in args},
                sequence_nr=int(args.get("Sequence number", -1)),
            )
            if tensor_info is not None and cat == "cpu_op":
                key_us = int(round(float(e["ts"]) + base_ns_epoch / 1000.0))
                info = tensor_info.get((op.name, key_us)) or tensor_info.get((op.name, key_us - 1)) \
                    or tensor_info.get((op.name, key_us + 1))
                if info:
                    op.input_storages = info.get("storages", [])
                    op.list_dtypes = info.get("list_dtypes", [])
                    _fill_list_dims(op, info.get("list_dims") or [])
            ops.append(op)
        elif cat in KERNEL_CATEGORIES:
            kernels.append(RawKernel(
                name=str(e.get("name", "")),
                category=cat,
                ts_ns=_ns(e["ts"], base_us),
                dur_ns=int(round(float(e.get("dur", 0)) * 1000.0)),
                external_id=int(args.get("External id", -1)),
                correlation=int(args.get("correlation", -1)),
                device=int(args.get("device", 0) or 0),
                stream=int(args.get("stream", 0) or 0),
                grid=_triple(args.get("grid")),
                block=_triple(args.get("block")),
                bytes=int(args["bytes"]) if isinstance(args.get("bytes"), (int, float)) else None,
                shared_memory=int(args["shared memory"]) if isinstance(args.get("shared memory"), (int, float)) else None,
                registers_per_thread=_count(args.get("registers per thread")),
            ))
        elif cat in LAUNCH_CATEGORIES and "correlation" in args:
            launches[int(args["correlation"])] = _ns(e["ts"], base_us)
            runtime_calls.append((_tid(e), launches[int(args["correlation"])], str(e.get("name", "")),
                                  int(args.get("External id", -1))))
            if str(e.get("name", "")).startswith(("cudaGraphLaunch", "cuGraphLaunch")):
                graph_launches.append(int(args["correlation"]))
            if e.get("name") in SYNC_CALLS:
                syncs.append(RawSync(str(e["name"]), _ns(e["ts"], base_us), int(round(float(e.get("dur", 0)) * 1000.0)),
                                     int(args.get("External id", -1)), _tid(e)))
    ops.sort(key=lambda o: (o.tid, o.ts_ns, -o.dur_ns))
    kernels.sort(key=lambda k: (k.ts_ns, k.correlation))
    syncs.sort(key=lambda s: s.ts_ns)
    distributed = trace.get("distributedInfo")
    return RawTrace(ops=ops, kernels=kernels, launch_ts_ns=launches, graph_launches=graph_launches,
                    graph_captures=_graph_captures(runtime_calls), syncs=syncs,
                    distributed=dict(distributed) if isinstance(distributed, dict) else {})

