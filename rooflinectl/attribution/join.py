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

import bisect
import functools
import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rooflinectl.attribution.calls import cost_key, op_call, shapes_text
from rooflinectl.attribution.cpu_work import may_do_work, work_rows
from rooflinectl.attribution.declared import DeclaredLaunches
from rooflinectl.attribution.graphs import replay_sources
from rooflinectl.attribution.records import LAUNCH_COLUMNS, Attribution, Launch, Records  # noqa: F401 - LAUNCH_COLUMNS re-exported
from rooflinectl.attribution.spans import merge_spans, span_index
from rooflinectl.attribution.transfers import MEMCPY, copy_link
from rooflinectl.capture.region import CALIBRATION_NAME, MODULE_PREFIX, REGION_PREFIX, WARMUP_NAME
from rooflinectl.capture.trace import RawKernel, RawOp, RawTrace
from rooflinectl.costs import (
    InductorCppCall,
    InductorTritonLaunch,
    OpCost,
    Transfer,
    cost_of,
    explain_cost,
    has_formula,
)
from rooflinectl.costs.collectives import (
    GLOO_PREFIX,
    collective_from_args,
    collective_from_gloo,
)
from rooflinectl.costs.custom_ops import is_custom_op
from rooflinectl.costs.inductor import fused_label, is_generated_kernel

COMPILE_SCOPE_SUFFIX = " (dynamo_timed)"  # torch._dynamo.utils.dynamo_timed's profiler scopes: compile work
BACKWARD_PREFIX = "autograd::engine::evaluate_function: "
OPTIMIZER_PREFIXES = ("Optimizer.step#", "Optimizer.zero_grad#")

@dataclass
class Attributed:
    launches: pd.DataFrame  # LAUNCH_COLUMNS, in launch order
    window_s: float  # wall time of the counted window
    regions: list[str]
    host_events: int  # profiler events (ops, annotations) recorded in the window: each paid the profiler's cost
    compile_work_s: float = 0.0  # time of kernels (GPU) or ops (CPU) run by torch.compile while compiling, not counted
    region_runs: int = 0  # how many times a rooflinectl.region block ran


class _OpIndex:
    """Parents, modules, regions and costs of the trace's ops, computed once."""

    def __init__(self, trace: RawTrace, device_kind: str = "cuda", world_size: int = 1) -> None:
        self.ops = trace.ops
        self.device_kind = device_kind
        self.world_size = world_size  # the group of a gloo collective (gloo does not record it)
        self.parent: list[int] = [-1] * len(self.ops)
        self.children: list[list[int]] = [[] for _ in self.ops]
        stack: list[int] = []
        current_tid = None
        for i, op in enumerate(self.ops):  # sorted by (tid, ts, -dur)
            if op.tid != current_tid:
                stack, current_tid = [], op.tid
            while stack and self.ops[stack[-1]].end_ns <= op.ts_ns:
                stack.pop()
            if stack:
                self.parent[i] = stack[-1]
                self.children[stack[-1]].append(i)
            stack.append(i)
        self.by_external = {op.external_id: i for i, op in enumerate(self.ops) if op.external_id >= 0}
        annotations = [o for o in self.ops if o.category == "user_annotation"]  # one pass over the ops
        self.region_named = [i for i, o in enumerate(self.ops) if o.name.startswith(REGION_PREFIX)]
        regions = [self.ops[i] for i in self.region_named if self.ops[i].category == "user_annotation"]
        self.region_runs = len(regions)
        self.region_spans = merge_spans([(o.ts_ns, o.end_ns) for o in regions])
        self.region_names = sorted({o.name[len(REGION_PREFIX):] for o in regions})
        self.excluded_spans = merge_spans([(o.ts_ns, o.end_ns) for o in annotations
                                            if o.name in (CALIBRATION_NAME, WARMUP_NAME)])
        self._region_starts = [a for a, _ in self.region_spans]
        self._excluded_starts = [a for a, _ in self.excluded_spans]
        # per-op memos as lists (a dict of a million int keys costs ~70 MB more)
        self._costs: list[tuple[OpCost | None, str, str] | None] = [None] * len(self.ops)
        self._by_call: dict[tuple[Any, ...], tuple[OpCost | None, str, str]] = {}
        self._modules: list[str | None] = [None] * len(self.ops)
        self.compiled_kernels = trace.compiled_kernels
        self.compile_work = [False] * len(self.ops)  # inside a (dynamo_timed) scope; parents come first
        for i, op in enumerate(self.ops):
            self.compile_work[i] = op.name.endswith(COMPILE_SCOPE_SUFFIX) or (
                self.parent[i] >= 0 and self.compile_work[self.parent[i]])
        self.forward_by_seq = self._forward_ops()
        # a trace without module scopes, backward or optimizer ops (inference, or a trace another
        # tool recorded) names no module for any op: known once from its few distinct names
        self._has_modules = any(name.startswith((MODULE_PREFIX, BACKWARD_PREFIX, *OPTIMIZER_PREFIXES))
                                for name in {op.name for op in self.ops})

    def _forward_ops(self) -> dict[int, int]:
        """Autograd sequence number -> the outermost forward op that carries it (ops under an
        autograd::engine::evaluate_function op are backward work and share their forward's number)."""
        out: dict[int, int] = {}
        in_backward = [False] * len(self.ops)
        for i, op in enumerate(self.ops):  # parents come before children in this order
            parent = self.parent[i]
            in_backward[i] = op.name.startswith(BACKWARD_PREFIX) or (parent >= 0 and in_backward[parent])
            if op.sequence_nr >= 0 and not in_backward[i] and op.category == "cpu_op":
                out.setdefault(op.sequence_nr, i)
        return out

    def in_window(self, ts_ns: int) -> bool:
        """Counted: inside a region (or anywhere, without regions) and outside the overhead probe."""
        if _inside(ts_ns, self._excluded_starts, self.excluded_spans):
            return False
        return not self.region_spans or _inside(ts_ns, self._region_starts, self.region_spans)

    def events_in_window(self, starts_ns: np.ndarray) -> int:
        """How many ops (starting at starts_ns, in ops' order) are counted, the regions' own
        annotations left out: in_window for every op, vectorised."""
        counted = span_index(starts_ns, self.excluded_spans, closed=True) < 0  # closed, as in_window's spans
        if self.region_spans:
            counted &= span_index(starts_ns, self.region_spans, closed=True) >= 0
        return int(counted.sum()) - sum(1 for i in self.region_named if counted[i])

    def module(self, i: int) -> str:
        """The nn.Module path active at op i; for backward work, the forward op's module with
        ' (backward)' (autograd's sequence number links the two); for an optimizer's work,
        'optimizer AdamW.step' (its own annotation); '' when none applies. Remembered per op."""
        if i < 0 or not self._has_modules:
            return ""
        found = self._modules[i]
        if found is None:
            found = self._modules[i] = self._find_module(i)
        return found

    def _find_module(self, i: int) -> str:
        backward_seq, optimizer = -1, ""
        while i >= 0:
            op = self.ops[i]
            if op.category == "user_annotation" and op.name.startswith(MODULE_PREFIX):
                return op.name[len(MODULE_PREFIX):]
            if op.name.startswith(BACKWARD_PREFIX) and op.sequence_nr >= 0:
                backward_seq = op.sequence_nr
            if op.name.startswith(OPTIMIZER_PREFIXES) and not optimizer:
                optimizer = f"optimizer {op.name.split('#', 1)[-1]}"
            i = self.parent[i]
        forward = self.forward_by_seq.get(backward_seq, -1)
        if forward >= 0:
            module = self.module(forward)
            return f"{module} (backward)" if module else ""
        return optimizer

    def cost(self, i: int) -> tuple[OpCost | None, str]:
        """(cost or None, input shapes text) of op i."""
        return self._explained(i)[:2]

    def explained_entry(self, i: int) -> tuple[OpCost | None, str, str]:
        """(cost, shapes text, why unknown) of op i: one tuple shared by every op of the same
        distinct call (its identity tells launches of equal cost apart from the rest)."""
        return self._explained(i)

    def _explained(self, i: int) -> tuple[OpCost | None, str, str]:
        """(cost, shapes text, why unknown) of op i, computed once per distinct call (cost_key)."""
        cached = self._costs[i]
        if cached is None:
            op = self.ops[i]
            if op.category == "user_annotation" and op.name.startswith(GLOO_PREFIX) and self.device_kind == "cpu":
                gloo = collective_from_gloo(op.name, op.input_dims, op.input_types, self.world_size)
                cached = (cost_of(gloo), gloo.shapes(), "") if gloo else \
                    (None, "", "gloo annotation without the buffer's dims and type")
            elif op.category != "cpu_op":
                cached = (None, "", "")
            elif "Collective name" in op.args:  # record_param_comms: on GPU its kernels do the work
                nccl = collective_from_args(op.args) if self.device_kind == "cuda" else None
                why = "collective of a kind, size or dtype not modelled" if self.device_kind == "cuda" else ""
                cached = (cost_of(nccl), nccl.shapes(), "") if nccl else (None, "", why)
            elif not ("kernel_num_gb" in op.args or op.name in self.compiled_kernels or has_formula(op.name)):
                cached = (None, "", "")
            else:
                # children, then grandchildren: an op's hints may sit one level down (index_put_ ->
                # _index_put_impl_ -> masked_fill_ holds the boolean mask)
                kids = self.children[i]
                children = [self.ops[c] for c in kids] + [self.ops[g] for c in kids for g in self.children[c]]
                key = (cost_key(op, children), repr(sorted(op.args.items())) if op.args else "")
                cached = self._by_call.get(key)
                if cached is None:
                    cached = self._by_call[key] = self._compute_cost(op, children)
            self._costs[i] = cached
        return cached

    def _compute_cost(self, op: RawOp, children: list[RawOp]) -> tuple[OpCost | None, str, str]:
        if "kernel_num_gb" in op.args:
            call = op_call(op)
            return (cost_of(InductorTritonLaunch(op.name, op.args, call)), shapes_text(call), "")
        if op.name in self.compiled_kernels:
            buffers = self.compiled_kernels[op.name].get("buffers")
            shapes = " x ".join(str(b["shape"]) for b in buffers or [])
            return (cost_of(InductorCppCall(op.name, buffers)), shapes, "")
        call = op_call(op, children)
        cost, why = explain_cost(call)
        return (cost, shapes_text(call), why)

    def label(self, i: int) -> str:
        """The op column: the op's name, the aten ops a generated kernel fused, or for a
        collective's record_param_comms the c10d op that called it."""
        name = self.ops[i].name if i >= 0 else ""
        if i >= 0 and "Collective name" in self.ops[i].args and self.parent[i] >= 0 \
                and self.ops[self.parent[i]].name.startswith("c10d::"):
            return self.ops[self.parent[i]].name
        return fused_label(name) if is_generated_kernel(name) else name

    def source(self, i: int) -> str:
        """cost_source of op i's cost: inductor for generated kernels, analytic for our formulas."""
        return "inductor" if is_generated_kernel(self.ops[i].name) else "analytic"

    def why_unknown(self, i: int) -> str:
        """Why no op at or above i gave a cost: a formula's failure if one failed (the innermost),
        else that the innermost op has no formula, else that no op is linked."""
        inner = self.innermost_cpu_op(i)
        if inner < 0:
            return "no op linked: the trace links this kernel to no CPU op"
        j = inner
        while j >= 0:
            if self.ops[j].category == "cpu_op" and self._explained(j)[2]:
                return self._explained(j)[2]
            j = self.parent[j]
        return f"no cost formula for {self.ops[inner].name}"

    def costed_ancestor(self, i: int) -> int:
        """Nearest op at or above i with a known cost, -1 if none."""
        ops, costs = self.ops, self._costs
        while i >= 0:
            if ops[i].category == "cpu_op" and ((costs[i] or self._explained(i))[0] is not None):
                return i
            i = self.parent[i]
        return -1

    def is_work_unit(self, i: int) -> bool:
        """CPU: an op with a cost formula, or a gloo worker's collective annotation."""
        return (self.ops[i].category == "cpu_op" or self.ops[i].name.startswith(GLOO_PREFIX)) \
            and self.cost(i)[0] is not None

    def innermost_cpu_op(self, i: int) -> int:
        while i >= 0 and self.ops[i].category != "cpu_op":
            i = self.parent[i]
        return i


def _inside(ts_ns: int, starts: list[int], spans: list[tuple[int, int]]) -> bool:
    """ts within one of the merged, sorted spans (binary search: traces have many regions)."""
    i = bisect.bisect_right(starts, ts_ns) - 1
    return i >= 0 and ts_ns <= spans[i][1]


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
    index = _OpIndex(trace, device_kind, int(world))
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


def _compile_work_s(trace: RawTrace, index: _OpIndex, device_kind: str) -> float:
    """Time torch.compile spent running work while compiling: GPU kernels it launched (autotuning
    benchmarks), or on CPU its outermost ops, inside the counted window."""
    if device_kind == "cuda":
        total = sum(k.dur_ns for k in trace.kernels if (i := index.by_external.get(k.external_id, -1)) >= 0
                    and index.compile_work[i] and index.in_window(index.ops[i].ts_ns))
    else:
        total = sum(op.dur_ns for i, op in enumerate(index.ops) if op.name.endswith(COMPILE_SCOPE_SUFFIX)
                    and not (index.parent[i] >= 0 and index.compile_work[index.parent[i]]) and index.in_window(op.ts_ns))
    return total / 1e9


def _window_ns(launches: pd.DataFrame, index: _OpIndex) -> int:
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


def _gpu_records(trace: RawTrace, index: _OpIndex, records: Records) -> None:
    triton_queue = DeclaredLaunches(trace)
    replayed = replay_sources(trace, lambda ext: index.ops[i].name if (i := index.by_external.get(ext, -1)) >= 0 else None)
    pending: list[tuple[RawKernel, int, int, int, dict[str, Any] | None, int, int]] = []
    # names bound once: this loop runs once per launch (millions on a long run)
    ops, by_external, launch_ts_ns, compile_work = index.ops, index.by_external, trace.launch_ts_ns, index.compile_work
    windowed = bool(index.region_spans or index.excluded_spans)  # else every launch is in the window
    # per launch: kernel, its own op, its op (a replay: the capture's), costed op, triton cost, launch ts,
    # instance (graph replay, or -1)
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
    time_by_op: dict[tuple[int, int], int] = defaultdict(int)  # an op's cost is split among its kernels per run
    for k, _, _, costed, _, _, instance in pending:
        if costed >= 0:
            time_by_op[(costed, instance)] += k.dur_ns
    graph_correlations = set(trace.graph_launches)
    # A launch of a costed op, not replayed, whose row differs from an earlier one's only in its
    # own numbers: its kind is looked up, not built again (most launches of a long run).
    kinds: dict[tuple[Any, ...], int] = {}
    declared_numbers: dict[int, tuple[float, float]] = {}  # kind -> FLOPs and bytes of a Triton summary's launch
    # label and cost source of an op depend on its name alone, unless it launched a collective
    # (label then names the c10d op around it): remembered per name for the rest
    labels: dict[str, tuple[str, str]] = {}
    looked_up: list[tuple[int, float, float, float, int, int, int, int]] = []  # launches of known kinds, in order
    for k, own_i, op_i, costed, declared, ts, instance in pending:
        inner = op_i if op_i >= 0 and ops[op_i].category == "cpu_op" else index.innermost_cpu_op(op_i)
        module = index.module(op_i) or (index.module(own_i) if own_i != op_i else "")
        common = costed >= 0 and declared is None and instance < 0 and k.category == "kernel"
        if common:
            entry = index.explained_entry(costed)
            costed_op = ops[costed]
            collective = "Collective name" in costed_op.args
            named = None if collective else labels.get(costed_op.name)
            if named is None:
                named = (index.label(costed), index.source(costed))
                if not collective:
                    labels[costed_op.name] = named
            key = (k.name, k.grid, k.block, k.registers_per_thread, k.shared_memory, id(entry), *named, module,
                   inner >= 0)
            kind = kinds.get(key)
            if kind is not None:
                total = time_by_op[(costed, instance)]
                share = k.dur_ns / total if total > 0 else 1.0
                cost = entry[0]
                looked_up.append((kind, k.dur_ns / 1e9, cost.flops * share, cost.bytes * share, k.ts_ns,
                                  k.ts_ns + k.dur_ns, ts, k.correlation))
                continue
        if declared is not None:  # a launch of a Triton summary seen before, with the same launch and op
            key = (id(declared), k.correlation in graph_correlations, k.grid, k.block, k.registers_per_thread,
                   k.shared_memory, module, inner)
            seen = kinds.get(key)
            if seen is not None:
                looked_up.append((seen, k.dur_ns / 1e9, *declared_numbers[seen], k.ts_ns, k.ts_ns + k.dur_ns, ts,
                                  k.correlation))
                continue
        records.add_kinds(looked_up)  # the launches before this one first: the table keeps launch order
        looked_up.clear()
        blocks, threads = _product(k.grid), _product(k.block)
        origin = kernel_origin(k.name, inner >= 0 and not is_custom_op(ops[inner].name), declared is not None)
        launch = Launch(k.name, module, "cuda", k.dur_ns / 1e9, k.ts_ns, k.end_ns, ts, blocks, threads,
                        _known(k.registers_per_thread), _known(k.shared_memory), k.correlation)
        replay_note = "replayed from a CUDA graph: op from the graph's capture" if instance >= 0 else ""
        if k.category != "kernel":
            how = _transfer_attribution(k, index.ops[inner].name if inner >= 0 else "")
        elif declared is not None:
            around = ops[inner].name if inner >= 0 and is_custom_op(ops[inner].name) else k.name  # a user's op
            how = triton_queue.attribution(k.name, k.correlation, declared, origin, around)
        elif costed >= 0:
            cost, shapes = index.cost(costed)
            total = time_by_op[(costed, instance)]
            share = k.dur_ns / total if total > 0 else 1.0
            how = Attribution(index.label(costed), cost, share, shapes, origin, index.source(costed), replay_note)
        else:
            op_name = index.label(_working_op(index, inner))
            note = ("replayed from a CUDA graph whose capture the trace does not hold (captured before profiling?): "
                    "no op, so no cost" if k.correlation in graph_correlations and instance < 0
                    else "Inductor kernel compiled without its cost annotations (benchmark_kernel off)"
                    if is_generated_kernel(k.name) else index.why_unknown(op_i))
            how = Attribution(op_name, None, 0.0, "", origin, "none", note)
        kind = records.add(launch, how)
        if common or declared is not None:
            kinds[key] = kind
        if declared is not None:
            declared_numbers[kind] = (how.cost.flops, how.cost.bytes) if how.cost is not None else (math.nan, math.nan)
    records.add_kinds(looked_up)


def _working_op(index: _OpIndex, i: int) -> int:
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


def _cpu_records(index: _OpIndex, records: Records) -> None:
    """One row per unit of CPU work (attribution/cpu_work.py: no op's time left out or counted twice)."""
    roots = [i for i, p in enumerate(index.parent) if p == -1]
    for i, time_ns, cost, own_time in work_rows(index, roots, is_generated_kernel):
        op: RawOp = index.ops[i]
        if not index.in_window(op.ts_ns) or index.compile_work[i]:
            continue
        shapes = index.cost(i)[1]
        launch = Launch(op.name, index.module(i), "cpu", time_ns / 1e9, op.ts_ns, op.end_ns, op.ts_ns)
        generated = is_generated_kernel(op.name)
        origin = "inductor" if generated else "library" if op.name.startswith(GLOO_PREFIX) else "aten"
        if cost is not None:
            how = Attribution(index.label(i), cost, 1.0, shapes, origin, index.source(i))
        elif generated:
            how = Attribution(index.label(i), None, 0.0, shapes, origin, "none",
                               "Inductor C++ kernel whose buffers its generated wrapper does not let us read")
        else:
            why = index.why_unknown(i) + ("; its own time only (the ops inside it have their own rows)" if own_time else "")
            how = Attribution(op.name, None, 0.0, shapes_text(op_call(op)), "aten", "none", why)
        records.add(launch, how)
