"""Join op costs to the kernels they launched: one record per kernel launch.

Before: RawTrace ops (CPU ops and annotations, nested by time per thread) and kernels (each
with the External id of the innermost CPU op active at its launch).
After: a DataFrame, one row per launch (GPU) or per unit of CPU work, with its cost.

Rules (the README repeats them):
- GPU: a kernel carries the cost of the nearest op, itself or an enclosing one, that has a cost
  formula (the innermost op that launched it, else its parent, ...). When one op launched
  several kernels, its FLOPs and bytes are split among them in proportion to their durations
  (each kernel then shows the op's intensity). A Triton kernel that declared its cost through
  launch_metadata carries that cost instead (cost_source=triton); an undeclared one the bytes its
  tensor arguments span, a minimum (cost_source=triton-args; attribution/declared.py).
- CPU: the unit of work is the outermost op with a cost formula (its time includes the
  children that do its work); an op without formula whose subtree has no costed op is counted
  as unknown work, except metadata-only ops (views, allocations) which do no work.
- Regions: when the run has `rooflinectl.region` blocks, only work that started inside one
  (on any thread: backward ops run on autograd threads) is counted.
- A kernel with no costed op above it keeps cost_source=none and NaN FLOPs/bytes.
- Collectives (costs/collectives.py): on GPU, an NCCL kernel carries the cost of the
  `record_param_comms` op that launched it (the collective's size, type and group are its args)
  and takes the name of the c10d op around it (c10d::allreduce_); on CPU, gloo runs each
  collective on a worker thread inside a `gloo:<collective>` annotation, which is the unit of
  work (its group is taken to be the whole world: gloo records no group size); the c10d ops on
  the calling thread only hand the work over and are not counted.
- torch.compile: a kernel Inductor generated carries the cost of the op named after it (Inductor's
  estimate, costs/inductor.py, cost_source=inductor) and names the aten ops it fused as its op.
  Work launched inside a `(dynamo_timed)` scope (compiling, autotuning benchmarks) is not the
  user's work: it is left out and its time reported apart (compile_work_s).
"""

from __future__ import annotations

import functools
import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rooflinectl.attribution.calls import op_call, shapes_text
from rooflinectl.attribution.cpu_work import may_do_work, work_rows
from rooflinectl.attribution.declared import DeclaredLaunches
from rooflinectl.attribution.graphs import replay_sources
from rooflinectl.attribution.op_index import COMPILE_SCOPE_SUFFIX, OpIndex
from rooflinectl.attribution.records import LAUNCH_COLUMNS, Attribution, Launch, Records  # noqa: F401 - LAUNCH_COLUMNS re-exported
from rooflinectl.attribution.transfers import MEMCPY, copy_link
from rooflinectl.capture.read.raw import RawKernel, RawOp, RawTrace
from rooflinectl.costs import Transfer, cost_of
from rooflinectl.costs.collectives import (
    GLOO_PREFIX,
)
from rooflinectl.costs.custom_ops import is_custom_op
from rooflinectl.costs.inductor import (
    is_generated_kernel,
)


@dataclass
class Attributed:
    launches: pd.DataFrame  # LAUNCH_COLUMNS, in launch order
    window_s: float  # wall time of the counted window
    regions: list[str]
    host_events: int  # profiler events (ops, annotations) recorded in the window: each paid the profiler's cost
    compile_work_s: float = 0.0  # time of kernels (GPU) or ops (CPU) run by torch.compile while compiling, not counted
    region_runs: int = 0  # how many times a rooflinectl.region block ran


@functools.lru_cache(maxsize=8192)  # a long run launches the same few hundred kernels over and over
def kernel_origin(name: str, has_aten_op: bool, triton_declared: bool) -> str:
    """Who wrote the kernel: triton (user Triton), inductor (torch.compile), library, aten, other."""
    lowered = name.lower()
    if name.startswith("triton_"):  # Inductor names its kernels triton_poi_/triton_red_/triton_per_...
        return "inductor"
    if triton_declared:
        return "triton"
    if any(s in lowered for s in ("gemm", "cutlass", "cublas", "nvjet", "xmma", "cudnn", "flash", "fmha",
                                   "sm90_", "sm80_", "ampere_", "hopper", "magma", "cusparse", "nccl")):
        return "library"
    if name.startswith("Memcpy") or name.startswith("Memset") or "at::native" in name or "at::" in name:
        return "aten"
    return "aten" if has_aten_op else "other"


def attribute(trace: RawTrace, device_kind: str, metadata: dict[str, Any]) -> Attributed:
    world = metadata.get("world_size") or trace.distributed.get("world_size") or 1
    index = OpIndex(trace, device_kind, int(world), metadata)
    records = Records(metadata)
    if device_kind == "cuda":
        _gpu_records(trace, index, records)
    else:
        _cpu_records(index, records)
    launches = records.frame()
    host_events = index.events_in_window(trace.op_times_ns()[0])
    return Attributed(launches=launches, window_s=_window_ns(launches, index) / 1e9, regions=index.region_names,
                      host_events=host_events, compile_work_s=_compile_work_s(trace, index, device_kind),
                      region_runs=index.region_runs)


def _compile_work_s(trace: RawTrace, index: OpIndex, device_kind: str) -> float:
    """Time torch.compile spent running work while compiling: GPU kernels it launched (autotuning
    benchmarks), or on CPU its outermost ops, inside the counted window."""
    if device_kind == "cuda":
        total = sum(k.dur_ns for k in trace.kernels if (i := index.by_external.get(k.external_id, -1)) >= 0
                    and index.compile_work[i] and index.in_window(index.ops[i].ts_ns))
    else:
        total = sum(op.dur_ns for i, op in enumerate(index.ops) if op.name.endswith(COMPILE_SCOPE_SUFFIX)
                    and not (index.parent[i] >= 0 and index.compile_work[index.parent[i]]) and index.in_window(op.ts_ns))
    return total / 1e9


def _window_ns(launches: pd.DataFrame, index: OpIndex) -> int:
    """Wall time of the counted work: per region, from its first counted kernel's start to its last
    kernel's end (kernels run after the host launched them, so the device timeline is what counts);
    without regions, the span of all counted work."""
    if launches.empty:
        return 0
    if not index.region_spans:
        return int(launches["end_ns"].max() - launches["start_ns"].min())
    starts = np.array([a for a, _ in index.region_spans])
    ends = np.array([b for _, b in index.region_spans])
    launch = launches["launch_ns"].to_numpy()
    region = np.searchsorted(starts, launch, side="right") - 1
    inside = (region >= 0) & (launch <= ends[np.clip(region, 0, None)])
    spans = launches[inside].groupby(region[inside]).agg(first=("start_ns", "min"), last=("end_ns", "max"))
    return int((spans["last"] - spans["first"]).sum())


# Per launch, in launch order: the kernel, its own op (External id), its op (a replay: the
# capture's), the costed op above it (-1: none), its Triton declaration, its launch time, and its
# instance (the graph launch's correlation for a replayed kernel, else -1).
Pending = tuple[RawKernel, int, int, int, dict[str, Any] | None, int, int]


def _pending_launches(trace: RawTrace, index: OpIndex, triton_queue: DeclaredLaunches) -> list[Pending]:
    """The launches in the counted window, each with the ops it belongs to (compile work left out)."""
    replayed = replay_sources(trace, lambda ext: index.ops[i].name if (i := index.by_external.get(ext, -1)) >= 0 else None)
    pending: list[Pending] = []
    # names bound once: this loop runs once per launch (millions on a long run)
    ops, by_external, launch_ts_ns, compile_work = index.ops, index.by_external, trace.launch_ts_ns, index.compile_work
    windowed = bool(index.region_spans or index.excluded_spans)  # else every launch is in the window
    for k in trace.kernels:
        own_i = by_external.get(k.external_id, -1)  # a replayed kernel's: the op around the graph launch
        source = replayed.get(id(k)) if replayed else None
        op_i = by_external.get(source, -1) if source is not None else own_i
        # A kernel cites an annotation only when no op ran around its launch: a module scope recorded
        # by _RecordFunctionFast (kineto links kernels to it), which began before the launch did.
        by_op = own_i >= 0 and source is None and ops[own_i].category == "cpu_op"
        ts = ops[own_i].ts_ns if by_op else launch_ts_ns.get(k.correlation, k.ts_ns)
        declared = triton_queue.take(k.name, k.correlation) if triton_queue and k.category == "kernel" else None
        if (windowed and not index.in_window(ts)) or (own_i >= 0 and compile_work[own_i]):
            continue
        costed = -1 if declared or k.category != "kernel" else index.costed_ancestor(op_i)
        pending.append((k, own_i, op_i, costed, declared, ts, k.correlation if source is not None else -1))
    return pending


def _gpu_records(trace: RawTrace, index: OpIndex, records: Records) -> None:
    """One record per launch in the window (attribute's rules). Most launches of a long run repeat
    an earlier launch of the same kind (kernel, launch configuration, op, module): those are looked
    up and only their own numbers added (_GpuJoin.known_kind); a new kind is attributed in full."""
    join = _GpuJoin(trace, index, records)
    pending = _pending_launches(trace, index, join.triton_queue)
    for k, _, _, costed, _, _, instance in pending:
        if costed >= 0:
            join.time_by_op[(costed, instance)] += k.dur_ns
    ops = index.ops
    for k, own_i, op_i, costed, declared, ts, instance in pending:
        inner = op_i if op_i >= 0 and ops[op_i].category == "cpu_op" else index.innermost_cpu_op(op_i)
        module = index.module(op_i) or (index.module(own_i) if own_i != op_i else "")
        line = index.sources.source(op_i) if op_i >= 0 else index.sources.source(own_i)
        if declared is not None and not line[0] and declared.get("source") is not None:
            line = index.sources.location(declared["source"])  # a Triton launch's own line (capture/run/triton_hook.py)
        key = join.kind_key(k, costed, declared, instance, module, inner, line)
        if key is not None and join.known_kind(key, k, costed, declared, instance, ts):
            continue
        records.add_kinds(join.looked_up)  # the launches before this one first: the table keeps launch order
        join.looked_up.clear()
        join.new_kind(key, k, module, inner, op_i, costed, declared, instance, ts, line)
    records.add_kinds(join.looked_up)


class _GpuJoin:
    """The state of one GPU join: kinds seen, each op's kernel time per run, names' labels."""

    def __init__(self, trace: RawTrace, index: OpIndex, records: Records) -> None:
        self.index, self.records = index, records
        self.triton_queue = DeclaredLaunches(trace)
        self.time_by_op: dict[tuple[int, int], int] = defaultdict(int)  # an op's cost is split among its kernels per run
        self.graph_correlations = set(trace.graph_launches)
        # A launch of a costed op, not replayed, whose row differs from an earlier one's only in its
        # own numbers: its kind is looked up, not built again (most launches of a long run).
        self.kinds: dict[tuple[Any, ...], int] = {}
        self.declared_numbers: dict[int, tuple[float, float]] = {}  # kind -> FLOPs and bytes of a Triton summary's launch
        # label and cost source of an op depend on its name alone, unless it launched a collective
        # (label then names the c10d op around it): remembered per name for the rest
        self.labels: dict[str, tuple[str, str]] = {}
        self.looked_up: list[tuple[int, float, float, float, int, int, int, int]] = []  # launches of known kinds, in order

    def kind_key(self, k: RawKernel, costed: int, declared: dict[str, Any] | None, instance: int, module: str,
                 inner: int, line: tuple[str, ...]) -> tuple[Any, ...] | None:
        """What makes a launch's row the same as an earlier one's but for its own numbers: for a
        costed op's kernel (not replayed) or a Triton summary's launch; None for the rest."""
        if declared is not None:
            return (id(declared), k.correlation in self.graph_correlations, k.grid, k.block, k.registers_per_thread,
                    k.shared_memory, module, inner, line)
        if costed < 0 or instance >= 0 or k.category != "kernel":
            return None
        index = self.index
        entry = index.explained_entry(costed)
        costed_op = index.ops[costed]
        collective = "Collective name" in costed_op.args
        named = None if collective else self.labels.get(costed_op.name)
        if named is None:
            named = (index.label(costed), index.source(costed))
            if not collective:
                self.labels[costed_op.name] = named
        return ("op", k.name, k.grid, k.block, k.registers_per_thread, k.shared_memory, id(entry), *named, module,
                inner >= 0, line)

    def known_kind(self, key: tuple[Any, ...], k: RawKernel, costed: int, declared: dict[str, Any] | None,
                   instance: int, ts: int) -> bool:
        """Queue the launch as one of a kind seen before (True), or say it is new (False)."""
        kind = self.kinds.get(key)
        if kind is None:
            return False
        if declared is not None:
            flops, nbytes = self.declared_numbers[kind]
        else:
            total = self.time_by_op[(costed, instance)]
            share = k.dur_ns / total if total > 0 else 1.0
            cost = self.index.explained_entry(costed)[0]
            flops, nbytes = cost.flops * share, cost.bytes * share
        self.looked_up.append((kind, k.dur_ns / 1e9, flops, nbytes, k.ts_ns, k.ts_ns + k.dur_ns, ts, k.correlation))
        return True

    def new_kind(self, key: tuple[Any, ...] | None, k: RawKernel, module: str, inner: int, op_i: int, costed: int,
                 declared: dict[str, Any] | None, instance: int, ts: int, line: tuple[str, ...]) -> None:
        """Attribute a launch in full and record it (and its kind, when it has one)."""
        ops = self.index.ops
        origin = kernel_origin(k.name, inner >= 0 and not is_custom_op(ops[inner].name), declared is not None)
        launch = Launch(k.name, module, "cuda", k.dur_ns / 1e9, k.ts_ns, k.end_ns, ts, _product(k.grid),
                        _product(k.block), _known(k.registers_per_thread), _known(k.shared_memory), k.correlation, line)
        how = self.attribution(k, inner, op_i, costed, declared, instance, origin)
        kind = self.records.add(launch, how)
        if key is not None:
            self.kinds[key] = kind
        if declared is not None:
            self.declared_numbers[kind] = (how.cost.flops, how.cost.bytes) if how.cost is not None else (math.nan, math.nan)

    def attribution(self, k: RawKernel, inner: int, op_i: int, costed: int, declared: dict[str, Any] | None,
                    instance: int, origin: str) -> Attribution:
        """Whose cost a launch carries and why: its own size (memset, memcpy), its Triton
        declaration, its share of the costed op above it, or none (with the reason)."""
        index, ops = self.index, self.index.ops
        if k.category != "kernel":
            return _transfer_attribution(k, ops[inner].name if inner >= 0 else "")
        if declared is not None:
            around = ops[inner].name if inner >= 0 and is_custom_op(ops[inner].name) else k.name  # a user's op
            return self.triton_queue.attribution(k.name, k.correlation, declared, origin, around)
        if costed >= 0:
            cost, shapes = index.cost(costed)
            total = self.time_by_op[(costed, instance)]
            share = k.dur_ns / total if total > 0 else 1.0
            replay_note = "replayed from a CUDA graph: op from the graph's capture" if instance >= 0 else ""
            return Attribution(index.label(costed), cost, share, shapes, origin, index.source(costed), replay_note,
                               index.op_args(costed))
        note = ("replayed from a CUDA graph whose capture the trace does not hold (captured before profiling?): "
                "no op, so no cost" if k.correlation in self.graph_correlations and instance < 0
                else "Inductor kernel compiled without its cost annotations (benchmark_kernel off)"
                if is_generated_kernel(k.name) else index.why_unknown(op_i))
        return Attribution(index.label(_working_op(index, inner)), None, 0.0, "", origin, "none", note)


def _working_op(index: OpIndex, i: int) -> int:
    """The op an unknown kernel is shown under: the innermost op around it that may do work, not
    a metadata child it launched from (nonzero's as_strided_); i itself when none may."""
    j = i
    while j >= 0 and not may_do_work(index.ops[j], is_generated_kernel):
        j = index.parent[j]
    return j if j >= 0 else i


def _known(count: int | None) -> float:
    return math.nan if count is None else float(count)


@functools.lru_cache(maxsize=4096)  # one float per distinct grid, not one per launch
def _product(dims: tuple[int, int, int] | None) -> float:
    return float(math.prod(dims)) if dims else math.nan


def _transfer_attribution(k: RawKernel, op_name: str) -> Attribution:
    """A memset or memcpy carries its own size from the trace, never a share of its op's FLOPs
    (cuBLAS clears a workspace with a memset inside a GEMM op, for example)."""
    if k.bytes is None:
        return Attribution(op_name, None, 0.0, "", "aten", "none", "memset/memcpy size not recorded in the trace")
    link = copy_link(k.name)  # the classifier analysis holds the copy's roof with (attribution/transfers.py)
    in_device = k.category == "gpu_memcpy" and link is None and MEMCPY.match(k.name) is not None  # DtoD, DtoA, AtoD, AtoA
    kind = "memset" if k.category == "gpu_memset" else "device_copy" if in_device else \
        "peer_copy" if link == "peer" else "host_copy"
    cost = cost_of(Transfer(kind, float(k.bytes)))  # costs/transfers.py: what each kind moves
    return Attribution(op_name, cost, 1.0, "", "aten", "analytic")


def _cpu_records(index: OpIndex, records: Records) -> None:
    """One row per unit of CPU work (attribution/cpu_work.py: no op's time left out or counted twice)."""
    roots = [i for i, p in enumerate(index.parent) if p == -1]
    for i, time_ns, cost, own_time in work_rows(index, roots, is_generated_kernel):
        op: RawOp = index.ops[i]
        if not index.in_window(op.ts_ns) or index.compile_work[i]:
            continue
        shapes = index.cost(i)[1]
        launch = Launch(op.name, index.module(i), "cpu", time_ns / 1e9, op.ts_ns, op.end_ns, op.ts_ns,
                        source_line=index.sources.source(i))
        generated = is_generated_kernel(op.name)
        origin = "inductor" if generated else "library" if op.name.startswith(GLOO_PREFIX) else "aten"
        if cost is not None:
            how = Attribution(index.label(i), cost, 1.0, shapes, origin, index.source(i), op_args=index.op_args(i))
        elif generated:
            how = Attribution(index.label(i), None, 0.0, shapes, origin, "none",
                               "Inductor C++ kernel whose buffers its generated wrapper does not let us read")
        else:
            why = index.why_unknown(i) + ("; its own time only (the ops inside it have their own rows)" if own_time else "")
            how = Attribution(op.name, None, 0.0, shapes_text(op_call(op)), "aten", "none", why)
        records.add(launch, how)
