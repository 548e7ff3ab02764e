"""Rebuilders: the ops of a finding with the profiled shapes and dtype, as profiled and fixed.

What the profile does not record is chosen the common way and said here: operands are fresh
random tensors; an activation is contiguous and a matmul's second operand has nn.Linear's
layout (a [N, K] weight, transposed view), except where the finding says a transposed operand
is why the kernel ran unaligned (its M is a leading dimension); attention has no mask.
Convolutions: verify/rebuild_conv.py (from the row's op_args), called from the rules' rebuilders here.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pandas as pd
import torch

from rooflinectl.analysis.advice.common import (
    cell_float,
    cell_text,
    element_bytes,
    main_shape,
    numel,
    parse_shapes,
)
from rooflinectl.analysis.advice.gemm_kernels import GemmDims, gemm_dims
from rooflinectl.analysis.advice.registry import Finding
from rooflinectl.analysis.advice.rules_gemm import misaligned
from rooflinectl.verify import rebuild_conv, tensors
from rooflinectl.verify.registry import NotRebuilt, Pair, Trial, rebuilds


def _dims(row: pd.Series) -> GemmDims:
    dims = gemm_dims(cell_text(row, "op"), cell_text(row, "shapes"))
    if dims is None:
        raise NotRebuilt(f"cannot read M, N, K from {cell_text(row, 'op')} {cell_text(row, 'shapes')}")
    return dims


def gemm_call(op: str, dims: GemmDims, dtype: torch.dtype, transposed_a: bool = False) -> Callable[[], Any]:
    """One matmul of the op's kind on fresh operands: A [batch?, M, K] (or a transposed view of
    [K, M]), B the transposed view of a [N, K] weight, a bias for addmm ([N], as a Linear's) and
    baddbmm (a full [batch, M, N] one)."""
    if dims.batch > 1 or op in ("aten::bmm", "aten::baddbmm"):
        a = tensors.random_tensor(dims.batch, dims.m, dims.k, dtype=dtype)
        b = tensors.random_tensor(dims.batch, dims.n, dims.k, dtype=dtype).transpose(1, 2)
        if op == "aten::baddbmm":
            bias = tensors.random_tensor(dims.batch, dims.m, dims.n, dtype=dtype)
            return lambda: torch.baddbmm(bias, a, b)
        return lambda: torch.bmm(a, b)
    if transposed_a:
        a = tensors.random_tensor(dims.k, dims.m, dtype=dtype).t()
    else:
        a = tensors.random_tensor(dims.m, dims.k, dtype=dtype)
    b = tensors.random_tensor(dims.n, dims.k, dtype=dtype).t()
    if op == "aten::addmm":
        bias = tensors.random_tensor(dims.n, dtype=dtype)
        return lambda: torch.addmm(bias, a, b)
    if op == "aten::_int_mm":
        return lambda: torch._int_mm(a, b)
    return lambda: torch.mm(a, b)


def _gemm_bytes(dims: GemmDims, dtype: torch.dtype) -> int:
    size = torch.empty((), dtype=dtype).element_size()
    return dims.batch * (dims.m * dims.k + dims.k * dims.n + 2 * dims.m * dims.n) * size


def _rows(finding: Finding, kernels: pd.DataFrame) -> list[tuple[int, pd.Series]]:
    return [(r, kernels.iloc[r]) for r in finding.rows if r < len(kernels)]


@rebuilds("gemm.alignment")
def padded_gemm(finding: Finding, kernels: pd.DataFrame) -> list[Trial]:
    """Each GEMM row as profiled and with its misaligned dimensions padded to the suggested size;
    each convolution likewise, its channels padded (rebuild_conv.padded_convs)."""

    trials, convs = [], []
    for r, row in _rows(finding, kernels):
        case = misaligned(row)
        if case is None:
            raise NotRebuilt(f"row {r} is not a misaligned GEMM or convolution")
        if case.family == "conv":
            convs.append((row, case))
            continue
        op, dims, dtype = cell_text(row, "op"), _dims(row), tensors.dtype_of(row)
        fixed = GemmDims(m=case.padded.get("M", dims.m), n=case.padded.get("N", dims.n),
                         k=case.padded.get("K", dims.k), batch=dims.batch)
        transposed = "M" in case.dims

        def make(op: str = op, dims: GemmDims = dims, fixed: GemmDims = fixed, dtype: torch.dtype = dtype,
                 transposed: bool = transposed) -> Pair:
            return gemm_call(op, dims, dtype, transposed), gemm_call(op, fixed, dtype, transposed)

        padded = ", ".join(f"{k} {v} -> {case.padded[k]}" for k, v in case.dims.items())
        trials.append(Trial(f"{op.split('::')[-1]} {cell_text(row, 'shapes')} with {padded}", make,
                            cell_float(row, "time_s", 0.0), _gemm_bytes(dims, dtype) + _gemm_bytes(fixed, dtype)))
    return trials + rebuild_conv.padded_convs(convs)


def _with_tf32(enabled: bool, call: Callable[[], Any]) -> Callable[[], Any]:
    def run() -> Any:
        before = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = enabled
        try:
            return call()
        finally:
            torch.backends.cuda.matmul.allow_tf32 = before
    return run


@rebuilds("precision.fp32-matmul")
def tf32_gemm(finding: Finding, kernels: pd.DataFrame) -> list[Trial]:
    """Each fp32 GEMM row with TF32 off (as profiled) and on (the fix); each convolution with
    cuDNN's TF32 off and on (rebuild_conv.tf32_convs)."""

    trials, convs = [], []
    for _, row in _rows(finding, kernels):
        if cell_text(row, "op_family") == "conv":
            convs.append(row)
            continue
        if cell_text(row, "op_family") != "gemm":
            raise NotRebuilt("only matmuls and convolutions are rebuilt (attention: its fix is bf16 autocast)")
        op, dims = cell_text(row, "op"), _dims(row)

        def make(op: str = op, dims: GemmDims = dims) -> Pair:
            call = gemm_call(op, dims, torch.float32)
            return _with_tf32(False, call), _with_tf32(True, call)

        trials.append(Trial(f"{op.split('::')[-1]} {cell_text(row, 'shapes')} fp32 with TF32", make,
                            cell_float(row, "time_s", 0.0), _gemm_bytes(dims, torch.float32)))
    return trials + rebuild_conv.tf32_convs(convs)


@rebuilds("attention.materialised-scores")
def sdpa(finding: Finding, kernels: pd.DataFrame) -> list[Trial]:
    """q, k, v of the profiled shapes: matmul, softmax, matmul (as profiled) against SDPA."""
    rows = _rows(finding, kernels)
    softmax = next((r for _, r in rows if cell_text(r, "op_family") == "softmax"), None)
    if softmax is None:
        raise NotRebuilt("the finding names no softmax row")
    scores = main_shape(cell_text(softmax, "shapes"))
    if len(scores) < 3:
        raise NotRebuilt("the score matrix's shape is not recorded")
    head_dim = None
    for _, r in rows:
        shapes = [s for s in parse_shapes(cell_text(r, "shapes")) if len(s) >= 3]
        if cell_text(r, "op_family") == "gemm" and len(shapes) == 2 and numel(shapes[0]) == numel(scores):
            head_dim = shapes[1][-1]  # P [.., S, Sk] @ V [.., Sk, D]
    if head_dim is None:
        raise NotRebuilt("no matmul of the scores with V gives the head dimension")
    batch, (s_q, s_k) = scores[:-2], scores[-2:]
    dtype = tensors.dtype_of(softmax)

    def make() -> Pair:
        q = tensors.random_tensor(*batch, s_q, head_dim, dtype=dtype)
        k = tensors.random_tensor(*batch, s_k, head_dim, dtype=dtype)
        v = tensors.random_tensor(*batch, s_k, head_dim, dtype=dtype)
        scale = 1.0 / math.sqrt(head_dim)

        def naive() -> torch.Tensor:
            return torch.softmax(q @ k.transpose(-2, -1) * scale, dim=-1) @ v

        return naive, lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v)

    size = torch.empty((), dtype=dtype).element_size()
    needed = (3 * numel(scores) + 4 * math.prod(batch) * s_k * head_dim) * size
    return [Trial(f"attention q [{', '.join(map(str, [*batch, s_q, head_dim]))}] naive vs SDPA", make,
                  sum(cell_float(r, "time_s", 0.0) for _, r in rows), needed)]


def loop_and_batch(op: str, dims: GemmDims, count: int, dtype: torch.dtype) -> Pair:
    """A Python loop of `count` matmuls on operands indexed out of stacked tensors (x[i] @ w[i];
    F.linear(x[i], w[i], b[i]) for addmm and linear), and one bmm (baddbmm) over the same tensors:
    both start from the same data, and the loop pays its host launches as the user's does."""
    a = tensors.random_tensor(count, dims.m, dims.k, dtype=dtype)
    w = tensors.random_tensor(count, dims.n, dims.k, dtype=dtype)  # weight layout [N, K], as nn.Linear's
    b = w.transpose(1, 2)
    if op in ("aten::addmm", "aten::linear"):
        bias = tensors.random_tensor(count, dims.n, dtype=dtype)
        rows = bias[:, None, :]
        return (lambda: [torch.nn.functional.linear(a[i], w[i], bias[i]) for i in range(count)],
                lambda: torch.baddbmm(rows, a, b))
    return (lambda: [a[i] @ b[i] for i in range(count)]), (lambda: torch.bmm(a, b))


@rebuilds("gemm.batch-small")
def batched(finding: Finding, kernels: pd.DataFrame) -> list[Trial]:
    """A run of n same-shape matmuls as a Python loop launches them, against one bmm over the n
    stacked operands. One call of each is one run, timed end to end (the loop's host launch cost
    included): the measured difference counts once per run the profile saw (launches in runs / n)."""
    ((_, row),) = _rows(finding, kernels)
    op, dims, dtype = cell_text(row, "op"), _dims(row), tensors.dtype_of(row)
    n = int(finding.numbers.get("run_length", 0))
    if n < 2:
        raise NotRebuilt("the run length is not recorded")
    batch = GemmDims(m=dims.m, n=dims.n, k=dims.k, batch=n)
    calls = max(cell_float(row, "calls", 1.0), 1.0)
    in_runs = finding.numbers.get("launches_in_runs", calls)
    profiled_s = finding.numbers.get("span_s", cell_float(row, "time_s", 0.0) * min(in_runs / calls, 1.0))
    return [Trial(f"{n} x {op.split('::')[-1]} {cell_text(row, 'shapes')} in a loop vs one bmm",
                  lambda: loop_and_batch(op, dims, n, dtype), profiled_s, 2 * _gemm_bytes(batch, dtype),
                  runs=in_runs / n)]


@rebuilds("gemm.legacy-kernel")
def fp8_instead_of_int8(finding: Finding, kernels: pd.DataFrame) -> list[Trial]:
    """An int8 torch._int_mm (as profiled) against the fp8 torch._scaled_mm of the same shape."""
    ((_, row),) = _rows(finding, kernels)
    if cell_text(row, "op") != "aten::_int_mm":
        raise NotRebuilt("no mechanical fix on the op: the kernel choice is the library's")
    dims = _dims(row)
    if element_bytes(row) != 1:
        raise NotRebuilt("not an 8-bit product")

    def make() -> Pair:
        a8 = tensors.random_tensor(dims.m, dims.k, dtype=torch.float32).to(torch.float8_e4m3fn)
        b8 = tensors.random_tensor(dims.n, dims.k, dtype=torch.float32).to(torch.float8_e4m3fn).t()
        one = torch.ones((), device=tensors.DEVICE, dtype=torch.float32)
        scaled = lambda: torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)  # noqa: E731
        return gemm_call("aten::_int_mm", dims, torch.int8), scaled

    return [Trial(f"_int_mm {cell_text(row, 'shapes')} vs fp8 _scaled_mm", make, cell_float(row, "time_s", 0.0),
                  2 * _gemm_bytes(dims, torch.int8) + 2 * dims.m * dims.n * 2)]
