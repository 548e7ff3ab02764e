"""Costs of collective communication (NCCL kernels, gloo work): the bytes that cross the link.

A collective's cost is not FLOPs over DRAM bytes but its bytes over the link between the GPUs.
We follow nccl-tests (doc/PERFORMANCE.md in github.com/NVIDIA/nccl-tests), whose figures are the
ones users compare against:
- size S: the bytes of the collective's data: count x element size for all-reduce, broadcast,
  reduce and send/recv; the total (all ranks') buffer for all-gather, reduce-scatter, all-to-all,
  gather and scatter. The profiler records the element counts of both sides ("In msg nelems",
  "Out msg nelems"), so S = max(in, out) x element size in every case.
- algorithm bandwidth algbw = S / time; bus bandwidth busbw = algbw x factor, with factor
  2(n-1)/n for all-reduce, (n-1)/n for all-gather, reduce-scatter, all-to-all, gather and
  scatter, and 1 for broadcast, reduce, send and recv (n = ranks in the group). busbw is what
  each rank's link carries in a ring, so it is comparable across collectives and with the link's
  own bandwidth: the link roof (ceilings --measure: all-reduce busbw between the local GPUs).
The cost we record: bytes = S x factor (bus bytes, so bytes / time is busbw), FLOPs 0 (the
reduction's additions, about S/element x (n-1)/n per rank, are not counted: the link bounds a
collective, never its arithmetic). Kernel time of a collective includes the time it waited for
the other ranks to arrive; the multi-rank view separates the two (analysis/ranks.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from rooflinectl.costs.registry import OpCost
from rooflinectl.costs.tensors import PROFILER_DTYPES

GLOO_PREFIX = "gloo:"  # gloo's worker threads annotate each collective they run: gloo:all_reduce, ...

# nccl-tests' bus-bandwidth factor per collective, as a function of the group size n.
BUS_FACTORS: dict[str, Any] = {
    "all_reduce": lambda n: 2.0 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
    "gather": lambda n: (n - 1) / n,
    "scatter": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0 if n > 1 else 0.0,
    "reduce": lambda n: 1.0 if n > 1 else 0.0,
    "send": lambda n: 1.0,
    "recv": lambda n: 1.0,
    "barrier": lambda n: 0.0,
}
FACTOR_TEXT = {"all_reduce": "2(n-1)/n", "all_gather": "(n-1)/n", "reduce_scatter": "(n-1)/n",
               "all_to_all": "(n-1)/n", "gather": "(n-1)/n", "scatter": "(n-1)/n", "broadcast": "1",
               "reduce": "1", "send": "1", "recv": "1", "barrier": "0"}

# c10::ScalarType names, as record_param_comms writes its "dtype" arg.
SCALAR_TYPE_NAMES: dict[str, tuple[str, int]] = {
    "Float": ("fp32", 4), "Double": ("fp64", 8), "Half": ("fp16", 2), "BFloat16": ("bf16", 2),
    "Long": ("int64", 8), "Int": ("int32", 4), "Short": ("int16", 2), "Char": ("int8", 1),
    "Byte": ("uint8", 1), "Bool": ("bool", 1), "Float8_e4m3fn": ("fp8", 1), "Float8_e5m2": ("fp8", 1),
    "ComplexFloat": ("complex64", 8), "ComplexDouble": ("complex128", 16),
}

_SPELLINGS = (  # squashed name (lower case, no underscores) contains -> kind; first match wins
    ("allreduce", "all_reduce"), ("reducescatter", "reduce_scatter"), ("allgather", "all_gather"),
    ("alltoall", "all_to_all"), ("broadcast", "broadcast"), ("barrier", "barrier"), ("scatter", "scatter"),
    ("gather", "gather"), ("reduce", "reduce"), ("send", "send"), ("recv", "recv"),
)


def collective_kind(name: str) -> str | None:
    """'allreduce', '_allgather_base', 'gloo:all_reduce', 'reduce_scatter_tensor_coalesced' ->
    all_reduce, all_gather, all_reduce, reduce_scatter; None for a name that is no collective."""
    squashed = re.sub(r"[^a-z]", "", name.lower().removeprefix(GLOO_PREFIX).removeprefix("nccl:"))
    return next((kind for spelling, kind in _SPELLINGS if spelling in squashed), None)


@dataclass(frozen=True)
class Collective:
    """One collective call as the profiler recorded it."""

    kind: str  # a BUS_FACTORS key
    in_elements: int
    out_elements: int
    group_size: int
    dtype: str  # short name: fp32, bf16, ...
    itemsize: int

    @property
    def size_bytes(self) -> int:
        """nccl-tests' S: the collective's data size (the larger side of its buffers)."""
        return max(self.in_elements, self.out_elements) * self.itemsize

    @property
    def bus_factor(self) -> float:
        return float(BUS_FACTORS[self.kind](max(self.group_size, 1)))

    @property
    def bus_bytes(self) -> float:
        return self.size_bytes * self.bus_factor

    def shapes(self) -> str:
        """The shapes column: the buffer's elements, both sides where they differ."""
        if self.in_elements == self.out_elements:
            return f"[{self.in_elements}]"
        return f"[{self.in_elements}] -> [{self.out_elements}]"


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def collective_from_args(args: dict[str, Any]) -> Collective | None:
    """The collective of a `record_param_comms` op or NCCL kernel (its profiler args); None when
    the args do not name a collective we model or lack its size."""
    kind = collective_kind(str(args.get("Collective name", "")))
    dtype = SCALAR_TYPE_NAMES.get(str(args.get("dtype", "")))
    in_n, out_n = _int(args.get("In msg nelems")), _int(args.get("Out msg nelems"))
    group = _int(args.get("Group size"))
    if kind is None or dtype is None or in_n is None or out_n is None or not group:
        return None
    return Collective(kind, in_n, out_n, group, dtype[0], dtype[1])


def collective_from_gloo(name: str, input_dims: list[Any], input_types: list[str], group_size: int) -> Collective | None:
    """A gloo worker's annotation (`gloo:all_reduce` with the buffer's dims and type). gloo
    records no group size: the caller passes the world size (the default group's)."""
    kind = collective_kind(name)
    dims = input_dims[0] if input_dims and isinstance(input_dims[0], list) else None
    dtype = PROFILER_DTYPES.get(input_types[0]) if input_types else None
    if kind is None or dims is None or dtype is None or group_size < 1:
        return None
    elements = 1
    for d in dims:
        elements *= int(d)
    # gloo's all_gather / reduce_scatter annotate one side only; count the whole buffer as NCCL does.
    out = elements * group_size if kind == "all_gather" else elements
    return Collective(kind, elements, out, group_size, dtype[0], dtype[1])


def collective_cost(c: Collective) -> OpCost:
    """Bus bytes (nccl-tests) over the link, no FLOPs; the note says how they were counted."""
    note = (f"{c.kind.replace('_', '-')} of {max(c.in_elements, c.out_elements)} {c.dtype} over {c.group_size} "
            f"rank(s): bus bytes = size x {FACTOR_TEXT[c.kind]} (nccl-tests busbw); reduction adds not counted; "
            f"kernel time includes waiting for the other ranks")
    return OpCost(0.0, float(c.bus_bytes), "collective", c.dtype, note)
