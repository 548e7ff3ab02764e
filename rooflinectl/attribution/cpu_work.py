"""CPU units of work: every op's time in exactly one row, and a costed op's cost as it executes.

Before: the trace's ops nested per thread (attribution/op_index.py: parents, children, costs).
After: rows (op, time, cost), in start order, whose times add up to the time of the outermost
ops that do work (the profile's device time on a CPU), with no time left out or counted twice:
- a costed op (or a gloo collective) is one row with its whole duration;
- an op that may do work but has no cost keeps its own time in an unknown row: its duration less
  the rows found inside it (`(x > 0).nonzero()`: the whole nonzero, not its as_strided_ child);
- an op that does no work itself (a view, an allocation, a composite such as linear, an autograd
  node) spreads its own time (dispatch, bookkeeping) over the rows inside it, in proportion to
  their times: that time was spent getting their work done;
- an outermost op with no work under it (a lone view or allocation) is no row: no device time.
A costed op whose children are costed too is charged what they execute (registry.OpCost.min_bytes
keeps its own minimum): its own cost plus helper children's (costs.HELPER_OPS: a zero fill or a
contiguous copy before its own kernel), or its children's alone when it delegates its work to them
(rms_norm, logsumexp, softmax with a dtype, argsort).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import NamedTuple, Protocol

from rooflinectl.capture.read.raw import RawOp
from rooflinectl.costs import HELPER_OPS, NO_WORK_OPS, OpCost
from rooflinectl.costs.collectives import GLOO_PREFIX
from rooflinectl.costs.custom_ops import costed_by_fallback, is_custom_op


class OpTree(Protocol):
    ops: list[RawOp]
    children: list[list[int]]

    def cost(self, i: int) -> tuple[OpCost | None, str]: ...

    def is_work_unit(self, i: int) -> bool: ...


class WorkRow(NamedTuple):
    op: int  # the op's index in the trace
    time_ns: float  # its share of the device time (a costed op: its duration and any composite's overhead)
    cost: OpCost | None  # what ran, or None (unknown work)
    own_time: bool  # an unknown row holding only the op's own time (its children's rows apart)


def may_do_work(op: RawOp, generated: Callable[[str], bool]) -> bool:
    """A CPU op without formula counts as unknown work unless it is a view, an allocation, an
    autograd bookkeeping node ("TBackward0", "autograd::engine::...") whose children do the work,
    or a c10d op handing a collective to its backend (gloo's worker thread does that work)."""
    if op.category == "cpu_op" and generated(op.name):
        return True
    return (op.category == "cpu_op" and "::" in op.name
            and not op.name.startswith(("autograd::", "torch::autograd::", "c10d::"))
            and op.name not in NO_WORK_OPS)


def work_rows(tree: OpTree, roots: list[int], generated: Callable[[str], bool]) -> list[WorkRow]:
    """The rows of every root's subtree (module doc), ordered by start."""
    rows = [r for root in roots for r in _rows(tree, root, generated)]
    return sorted(rows, key=lambda r: tree.ops[r.op].ts_ns)


def _rows(tree: OpTree, i: int, generated: Callable[[str], bool]) -> list[WorkRow]:
    op = tree.ops[i]
    inner = [r for c in tree.children[i] for r in _rows(tree, c, generated)]
    # a user's op with no formula of its own (costs/custom_ops.py) whose inner ops are costed: those
    # ops are the work, and its own time beside them an unknown row, as for any op without a formula
    by_fallback = costed_by_fallback(op.name) and any(r.cost is not None for r in inner)
    if tree.is_work_unit(i) and not by_fallback:
        return [WorkRow(i, float(op.dur_ns), executed_cost(tree, i, inner), False)]
    works = may_do_work(op, generated)
    if not inner:
        return [WorkRow(i, float(op.dur_ns), None, False)] if works else []
    covered = sum(r.time_ns for r in inner)
    rest = op.dur_ns - covered
    if op.category != "cpu_op" or rest <= 0:  # an annotation's own time is the user's Python, not work
        return inner
    if works:
        return [*inner, WorkRow(i, float(rest), None, True)]
    scale = op.dur_ns / covered if covered > 0 else 1.0
    return [r._replace(time_ns=r.time_ns * scale) for r in inner]


def executed_cost(tree: OpTree, i: int, inner: list[WorkRow]) -> OpCost | None:
    """Op i's cost as it ran: its own, plus its helper children's or replaced by its children's
    (module doc), its own minimum kept as min_bytes; its own cost when no child is costed."""
    own, _ = tree.cost(i)
    if own is None or tree.ops[i].name.startswith(GLOO_PREFIX) or is_custom_op(tree.ops[i].name):
        return own  # a user's op with its own formula: the formula the user registered wins
    costed = [r for r in inner if r.cost is not None]
    if not costed:
        return own
    child_flops = sum(r.cost.flops for r in costed)
    child_bytes = sum(r.cost.bytes for r in costed)
    names = sorted({tree.ops[r.op].name.removeprefix("aten::") for r in costed})
    name = tree.ops[i].name
    # a helper op (zero_ -> fill_) or an op that calls itself (arange -> arange.out, sort -> sort.stable)
    # hands its own work to that child: replaced, never added twice
    delegates = name in HELPER_OPS or any(tree.ops[r.op].name == name for r in costed)
    if not delegates and all(tree.ops[r.op].name in HELPER_OPS for r in costed):
        flops, moved = own.flops + child_flops, own.bytes + child_bytes
        how = f"executed: its own work plus {', '.join(names)} inside it"
    else:
        flops, moved = child_flops, child_bytes
        how = f"executed: the child ops that do its work ({', '.join(names[:6])}{', ...' if len(names) > 6 else ''})"
    if moved == own.bytes and flops == own.flops:
        return own
    return replace(own, flops=float(flops), bytes=float(moved), min_bytes=own.minimum_bytes,
                   note=f"{own.note}; bytes {how}; the op's minimum is min_bytes")
