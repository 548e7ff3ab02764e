"""Rebuilders for memory-bound element-wise work: a fusion chain eagerly vs under torch.compile,
and fp32 element-wise / norm / softmax ops vs the same ops in bf16.

Each row is rebuilt from its op name and recorded shapes. What the profile does not record is
chosen the common way: a pow's exponent is 3 (GELU's tanh form), a scalar operand is 0.5, a
copy keeps its dtype, a layer norm normalises the last dimension with a weight and a bias, a
softmax runs over the last dimension, dropout has p = 0.1. The chain's order is not kept by the
finding's rows are sorted, but a fusion chain keeps its launch order (`Finding.sequence`, a row
as often as it launched): the ops run one after the other on the chain's tensor in that order,
each output the next op's main operand, which moves the same bytes and launches the same
kernels as the profiled chain.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd
import torch
import torch.nn.functional as F

from rooflinectl.analysis.advice.common import cell_float, cell_text, numel, parse_shapes
from rooflinectl.analysis.advice.registry import Finding
from rooflinectl.verify import tensors
from rooflinectl.verify.registry import NotRebuilt, Pair, Trial, rebuilds

SCALAR = 0.5
UNARY: dict[str, Callable[..., torch.Tensor]] = {
    "tanh": torch.tanh, "gelu": F.gelu, "silu": F.silu, "relu": torch.relu, "sigmoid": torch.sigmoid,
    "exp": torch.exp, "neg": torch.neg, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt, "abs": torch.abs,
    "sin": torch.sin, "cos": torch.cos, "log": torch.log, "reciprocal": torch.reciprocal,
    "pow": lambda x: torch.pow(x, 3.0), "copy": torch.clone, "clone": torch.clone, "_to_copy": torch.clone,
    "contiguous": torch.clone, "_softmax": lambda x: torch.softmax(x, -1), "softmax": lambda x: torch.softmax(x, -1),
    "_log_softmax": lambda x: torch.log_softmax(x, -1), "log_softmax": lambda x: torch.log_softmax(x, -1),
    "native_dropout": lambda x: F.dropout(x, 0.1, training=True), "dropout": lambda x: F.dropout(x, 0.1, True),
    "sum": lambda x: x.sum(-1), "mean": lambda x: x.mean(-1), "amax": lambda x: x.amax(-1),
    "sort": lambda x: torch.sort(x, -1)[0],
}
BINARY: dict[str, Callable[..., torch.Tensor]] = {
    "add": torch.add, "mul": torch.mul, "sub": torch.sub, "div": torch.div, "maximum": torch.maximum,
    "minimum": torch.minimum, "where": lambda x, y: torch.where(x > 0, x, y), "floor_divide": torch.floor_divide,
}
# backward ops: (grad, saved tensor) of one shape, as autograd calls them
BINARY.update({
    "tanh_backward": torch.ops.aten.tanh_backward, "silu_backward": torch.ops.aten.silu_backward,
    "sigmoid_backward": torch.ops.aten.sigmoid_backward,
    "gelu_backward": lambda g, x: torch.ops.aten.gelu_backward(g, x, approximate="tanh"),
    "threshold_backward": lambda g, x: torch.ops.aten.threshold_backward(g, x, 0.0),
    "_softmax_backward_data": lambda g, y: torch.ops.aten._softmax_backward_data(g, y, -1, g.dtype),
    "_log_softmax_backward_data": lambda g, y: torch.ops.aten._log_softmax_backward_data(g, y, -1, g.dtype),
})
NORMS = ("native_layer_norm", "layer_norm")


def _name(op: str) -> str:
    """'aten::add_' -> 'add': an in-place op costs what its out-of-place form does."""
    name = op.split("::")[-1]
    return name if name.startswith("_") else name.rstrip("_")


@dataclass(frozen=True)
class Step:
    """One profiled op on the chain's tensor: fn(x, *extras), extras built fresh from their shapes."""

    label: str
    fn: Callable[..., torch.Tensor]
    main: tuple[int, ...]  # the operand that carries the chain (the largest input)
    extras: tuple[tuple[int, ...] | None, ...]  # None: a scalar operand

    def operands(self, dtype: torch.dtype) -> list[Any]:
        return [SCALAR if s is None else tensors.random_tensor(*s, dtype=dtype) for s in self.extras]


def step_of(row: pd.Series) -> Step:
    """The row's op as a Step; NotRebuilt for an op this module has no rebuild for."""
    op = cell_text(row, "op")
    name = _name(op)
    shapes = parse_shapes(cell_text(row, "shapes"))
    tensors = [s for s in shapes if s]
    if not tensors:
        raise NotRebuilt(f"{op} has no recorded tensor shape")
    main = max(tensors, key=numel)
    if name in NORMS:
        width = main[-1]
        return Step(op, lambda x, w, b: F.layer_norm(x, (width,), w, b), main, ((width,), (width,)))
    if name == "cat":
        return _cat_step(op, main, tensors)
    if name in UNARY:
        return Step(op, UNARY[name], main, ())
    if name in BINARY:
        rest = list(shapes)
        rest.remove(main)
        other = rest[0] if rest else ()
        return Step(op, BINARY[name], main, (other or None,))
    raise NotRebuilt(f"no rebuild for {op}")


def _cat_step(op: str, main: tuple[int, ...], tensors: list[tuple[int, ...]]) -> Step:
    """torch.cat of the recorded tensors of the main one's rank (an empty 1-D tensor, as a KV cache
    starts, is skipped as cat skips it), along the one dimension where they differ (the profile
    keeps no dim argument; with none differing, dimension 0): the same bytes move."""
    rest = [s for s in tensors if len(s) == len(main)]
    rest.remove(main)
    diff = [d for s in rest for d in range(len(main)) if s[d] != main[d]]
    dim = diff[0] if diff else 0
    return Step(op, lambda x, *others: torch.cat([x, *others], dim), main, tuple(rest))


def run_chain(steps: list[Step]) -> Callable[..., torch.Tensor]:
    """The chain as one function of (x, operands of each step): each output is the next step's
    main operand while it keeps the chain's shape (a reduction ends its use)."""

    def chain(x: torch.Tensor, operands: list[list[Any]]) -> torch.Tensor:
        for step, extra in zip(steps, operands):
            y = step.fn(x, *extra)
            x = y if y.shape == x.shape else x
        return x

    return chain


def _bytes(steps: list[Step], dtype: torch.dtype) -> int:
    size = torch.empty((), dtype=dtype).element_size()
    return 3 * size * sum(numel(s.main) + sum(numel(e) for e in s.extras if e) for s in steps)


def replayed(call: Callable[[], Any]) -> Callable[[], Any]:
    """The call's launches captured in a CUDA graph and replayed, so its timing is the kernels'
    (what the profile counted for this work), not the host's: a few small element-wise kernels
    launch in less time than Python and torch.compile's guards take to issue them. Warmed up on a
    side stream first (compiling there), as torch.cuda.graphs asks. Off the GPU: the call itself."""
    if tensors.DEVICE != "cuda":
        return call
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            call()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        call()

    def replay() -> None:
        # the call (and so the inputs its closure holds) lives as long as the replay: a graph reads
        # its inputs' addresses, and a freed input's memory may be given back to the driver
        # (empty_cache) and read after, an illegal memory access (seen on the H200)
        keep = (call, graph)
        keep[1].replay()

    return replay


def _first(finding: Finding) -> Finding:
    """The instance a merged finding's evidence is (its rows are one chain)."""
    return finding.instances[0] if finding.instances else finding


@rebuilds("fusion.memory-chain")
def compiled_chain(finding: Finding, kernels: pd.DataFrame) -> list[Trial]:
    """The chain's ops eagerly (as profiled) against the same function under torch.compile
    (Inductor fuses them into one kernel), each replayed from a CUDA graph so the kernels' time is
    compared, not the host's; the speed-up applies to every instance's chain time."""
    first = _first(finding)
    rows = [kernels.iloc[r] for r in first.sequence or first.rows if r < len(kernels)]
    if "chains" in first.numbers:
        raise NotRebuilt("an optimizer's per-parameter update: its fix is the optimizer's fused=True, not a chain")
    steps = [step_of(row) for row in rows]
    dtype = tensors.dtype_of(rows[0])
    chains = finding.instances or (finding,)
    rows_s = sum(cell_float(kernels.iloc[r], "time_s", 0.0) for r in finding.rows if r < len(kernels))
    chains_s = sum(f.numbers.get("chain_time_s", 0.0) * f.numbers.get("occurrences", 1.0) for f in chains)
    profiled_s = min(chains_s, rows_s)  # chains may share a row: never more than the rows' time
    start = max((s.main for s in steps), key=numel)

    def make() -> Pair:
        x = tensors.random_tensor(*start, dtype=dtype)
        operands = [s.operands(dtype) for s in steps]
        eager = run_chain(steps)
        compiled = torch.compile(run_chain(steps), dynamic=False)
        return replayed(lambda: eager(x, operands)), replayed(lambda: compiled(x, operands))

    label = f"{'+'.join(_name(s.label) for s in steps)} on {list(start)} {str(dtype).split('.')[-1]} eager vs torch.compile"
    return [Trial(label, make, profiled_s, _bytes(steps, dtype))]


MAX_BF16_ROWS = 8  # the largest rows of a bf16-storage finding rebuilt (most of its time)


@rebuilds("precision.bf16-storage")
def bf16_ops(finding: Finding, kernels: pd.DataFrame) -> list[Trial]:
    """The finding's largest fp32 rows (up to 8), each op in fp32 (as profiled) and in bf16; the
    rows with an op this module cannot build are left out (the detail's profiled time says how
    much was rebuilt)."""
    rows = sorted((kernels.iloc[r] for r in finding.rows if r < len(kernels)),
                  key=lambda row: -cell_float(row, "time_s", 0.0))
    trials = []
    for row in rows:
        if len(trials) >= MAX_BF16_ROWS:
            break
        try:
            step = step_of(row)
        except NotRebuilt:
            continue

        def make(step: Step = step) -> Pair:
            def version(dtype: torch.dtype) -> Callable[[], torch.Tensor]:
                x = tensors.random_tensor(*step.main, dtype=dtype)
                extra = step.operands(dtype)
                return replayed(lambda: step.fn(x, *extra))
            return version(torch.float32), version(torch.bfloat16)

        trials.append(Trial(f"{cell_text(row, 'op')} {cell_text(row, 'shapes')} fp32 vs bf16", make,
                            cell_float(row, "time_s", 0.0), _bytes([step], torch.float32) * 2))
    if not trials:
        raise NotRebuilt("none of its ops has a rebuild")
    return trials
