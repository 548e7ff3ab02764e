"""The trace's ops indexed once for the join (attribution/join.py): parents and children per
thread, the counted window (regions, calibration and warm-up left out), the module of each op,
and each op's cost, label and cost source, memoised per distinct call.

Before: RawTrace ops sorted by (thread, start, longest first). After: lists by op position
(parent -1: none) and lookups by External id; no op is copied.
"""

from __future__ import annotations

import bisect
from typing import Any

import numpy as np

from rooflinectl.attribution.calls import cost_key, op_call, shapes_text
from rooflinectl.attribution.op_args import op_args_text
from rooflinectl.attribution.sources import SourceIndex
from rooflinectl.attribution.spans import merge_spans, span_index
from rooflinectl.capture.read.raw import RawOp, RawTrace
from rooflinectl.capture.run.region import (
    CALIBRATION_NAME,
    MODULE_PREFIX,
    REGION_PREFIX,
    WARMUP_NAME,
)
from rooflinectl.costs import (
    InductorCppCall,
    InductorTritonLaunch,
    OpCost,
    cost_of,
    explain_cost,
    has_formula,
)
from rooflinectl.costs.collectives import (
    GLOO_PREFIX,
    collective_from_args,
    collective_from_gloo,
)
from rooflinectl.costs.inductor import fused_label, is_generated_kernel

COMPILE_SCOPE_SUFFIX = " (dynamo_timed)"  # torch._dynamo.utils.dynamo_timed's profiler scopes: compile work
BACKWARD_PREFIX = "autograd::engine::evaluate_function: "
OPTIMIZER_PREFIXES = ("Optimizer.step#", "Optimizer.zero_grad#")
Explained = tuple[OpCost | None, str, str, str]  # cost, shapes text, why unknown, op_args (attribution/op_args.py)


class OpIndex:
    """Parents, modules, regions and costs of the trace's ops, computed once."""

    def __init__(self, trace: RawTrace, device_kind: str = "cuda", world_size: int = 1,
                 metadata: dict[str, Any] | None = None) -> None:
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
        self._costs: list[Explained | None] = [None] * len(self.ops)
        self._by_call: dict[tuple[Any, ...], Explained] = {}
        self._modules: list[str | None] = [None] * len(self.ops)
        self.compiled_kernels = trace.compiled_kernels
        self.compile_work = [False] * len(self.ops)  # inside a (dynamo_timed) scope; parents come first
        for i, op in enumerate(self.ops):
            self.compile_work[i] = op.name.endswith(COMPILE_SCOPE_SUFFIX) or (
                self.parent[i] >= 0 and self.compile_work[self.parent[i]])
        self.forward_by_seq = self._forward_ops()
        self.sources = SourceIndex(self.ops, self.parent, self.forward_by_seq, metadata or {})
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

    def explained_entry(self, i: int) -> Explained:
        """(cost, shapes text, why unknown, op_args) of op i: one tuple shared by every op of the
        same distinct call (its identity tells launches of equal cost apart from the rest)."""
        return self._explained(i)

    def op_args(self, i: int) -> str:
        """The kernel table's op_args of op i (attribution/op_args.py: a convolution's arguments)."""
        return self._explained(i)[3]

    def _explained(self, i: int) -> Explained:
        """(cost, shapes text, why unknown, op_args) of op i, computed once per distinct call (cost_key)."""
        cached = self._costs[i]
        if cached is None:
            op = self.ops[i]
            if op.category == "user_annotation" and op.name.startswith(GLOO_PREFIX) and self.device_kind == "cpu":
                gloo = collective_from_gloo(op.name, op.input_dims, op.input_types, self.world_size)
                cached = (cost_of(gloo), gloo.shapes(), "", "") if gloo else \
                    (None, "", "gloo annotation without the buffer's dims and type", "")
            elif op.category != "cpu_op":
                cached = (None, "", "", "")
            elif "Collective name" in op.args:  # record_param_comms: on GPU its kernels do the work
                nccl = collective_from_args(op.args) if self.device_kind == "cuda" else None
                why = "collective of a kind, size or dtype not modelled" if self.device_kind == "cuda" else ""
                cached = (cost_of(nccl), nccl.shapes(), "", "") if nccl else (None, "", why, "")
            elif not ("kernel_num_gb" in op.args or op.name in self.compiled_kernels or has_formula(op.name)):
                cached = (None, "", "", "")
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

    def _compute_cost(self, op: RawOp, children: list[RawOp]) -> Explained:
        if "kernel_num_gb" in op.args:
            call = op_call(op)
            return (cost_of(InductorTritonLaunch(op.name, op.args, call)), shapes_text(call), "", "")
        if op.name in self.compiled_kernels:
            buffers = self.compiled_kernels[op.name].get("buffers")
            shapes = " x ".join(str(b["shape"]) for b in buffers or [])
            return (cost_of(InductorCppCall(op.name, buffers)), shapes, "", "")
        call = op_call(op, children)
        cost, why = explain_cost(call)
        return (cost, shapes_text(call), why, op_args_text(call, cost))

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
