"""LayerNorm and RMSNorm, forward and backward, each fused into one pass over the rows.

Forward: a program holds one row in registers, computes its statistics, normalises, scales
(and shifts) and writes: x read once, y written once, plus an fp32 mean/rstd per row that the
backward reuses instead of recomputing from a second read. Backward: a program walks a band of
rows, writes dx row by row and accumulates its band's share of dw (and db) in fp32 registers;
a second small kernel sums the bands' partial rows. The weight gradient is a reduction over
all rows, so some cross-program step is unavoidable: partial sums keep it cheap and
deterministic (no atomics).
FLOPs (FMA = 2, per element): LayerNorm forward 8 and RMSNorm forward 4, as the cost model
counts torch's kernels; backward as these kernels compute: LayerNorm 13 (dx 10, dw and db 3),
RMSNorm 9 (dx 7, dw 2); the partial sums 1 per partial element.
Numerics: every backward output is computed in fp32 from the data (dw and db as fp32 partial
sums) and rounded once to the data's dtype, so against torch's fp32 backward it is off by one
rounding however many rows it sums (tests/test_kernels_interpret.py holds the LayerNorm backward
to one bf16 unit in the last place, and in fp32 to 1e-4); the reference kernel's bf16 tolerance
(harness.TOLERANCE) is wider.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from rooflinectl_kernels.cost import declare, tensor_bytes
from rooflinectl_kernels.registry import (
    KernelSpec,
    Target,
    Variant,
    processors,
    register,
    row_warps,
)

EPS = 1e-5


def _ln_fwd_cost(grid, metadata, args):
    x = args["x"]
    return declare("layernorm_fwd_kernel", family="norm", flops=8 * x.numel(), bits=32,
                   nbytes=tensor_bytes(x, args["w"], args["b"], args["y"], args["mean"], args["rstd"]))


def _rms_fwd_cost(grid, metadata, args):
    x = args["x"]
    return declare("rmsnorm_fwd_kernel", family="norm", flops=4 * x.numel(), bits=32,
                   nbytes=tensor_bytes(x, args["w"], args["y"], args["rstd"]))


def _ln_bwd_cost(grid, metadata, args):
    x = args["x"]
    return declare("layernorm_bwd_kernel", family="norm", flops=13 * x.numel(), bits=32,
                   nbytes=tensor_bytes(args["dy"], x, args["w"], args["mean"], args["rstd"], args["dx"],
                                       args["dw_part"], args["db_part"]))


def _rms_bwd_cost(grid, metadata, args):
    x = args["x"]
    return declare("rmsnorm_bwd_kernel", family="norm", flops=9 * x.numel(), bits=32,
                   nbytes=tensor_bytes(args["dy"], x, args["w"], args["rstd"], args["dx"], args["dw_part"]))


def _column_sum_cost(grid, metadata, args):
    """A reduction, but its family is the op it finishes (the norm backward's dw and db)."""
    part = args["part"]
    return declare("column_sum_kernel", family="norm", flops=part.numel(), bits=32, nbytes=tensor_bytes(part, args["out"]))


@triton.jit(launch_metadata=_ln_fwd_cost)
def layernorm_fwd_kernel(x, w, b, y, mean, rstd, n_cols, stride, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    v = tl.load(x + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    mu = tl.sum(v, axis=0) / n_cols
    centred = tl.where(mask, v - mu, 0.0)
    r = tl.rsqrt(tl.sum(centred * centred, axis=0) / n_cols + eps)
    scale = tl.load(w + cols, mask=mask, other=0.0).to(tl.float32)
    shift = tl.load(b + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y + row * stride + cols, (centred * r * scale + shift).to(y.dtype.element_ty), mask=mask)
    tl.store(mean + row, mu)
    tl.store(rstd + row, r)


@triton.jit(launch_metadata=_rms_fwd_cost)
def rmsnorm_fwd_kernel(x, w, y, rstd, n_cols, stride, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    v = tl.load(x + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    r = tl.rsqrt(tl.sum(v * v, axis=0) / n_cols + eps)
    scale = tl.load(w + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y + row * stride + cols, (v * r * scale).to(y.dtype.element_ty), mask=mask)
    tl.store(rstd + row, r)


@triton.jit(launch_metadata=_ln_bwd_cost)
def layernorm_bwd_kernel(dy, x, w, mean, rstd, dx, dw_part, db_part, n_rows, n_cols, stride, rows_per_program,
                         BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    scale = tl.load(w + cols, mask=mask, other=0.0).to(tl.float32)
    dw_acc = tl.zeros((BLOCK,), dtype=tl.float32)
    db_acc = tl.zeros((BLOCK,), dtype=tl.float32)
    first = pid * rows_per_program
    for row in range(first, tl.minimum(first + rows_per_program, n_rows)):
        offsets = tl.cast(row, tl.int64) * stride + cols
        v = tl.load(x + offsets, mask=mask, other=0.0).to(tl.float32)
        g = tl.load(dy + offsets, mask=mask, other=0.0).to(tl.float32)
        r = tl.load(rstd + row)
        xhat = tl.where(mask, (v - tl.load(mean + row)) * r, 0.0)
        wg = scale * g
        c1 = tl.sum(xhat * wg, axis=0) / n_cols
        c2 = tl.sum(wg, axis=0) / n_cols
        tl.store(dx + offsets, ((wg - (xhat * c1 + c2)) * r).to(dx.dtype.element_ty), mask=mask)
        dw_acc += g * xhat
        db_acc += g
    tl.store(dw_part + pid * n_cols + cols, dw_acc, mask=mask)
    tl.store(db_part + pid * n_cols + cols, db_acc, mask=mask)


@triton.jit(launch_metadata=_rms_bwd_cost)
def rmsnorm_bwd_kernel(dy, x, w, rstd, dx, dw_part, n_rows, n_cols, stride, rows_per_program, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    scale = tl.load(w + cols, mask=mask, other=0.0).to(tl.float32)
    dw_acc = tl.zeros((BLOCK,), dtype=tl.float32)
    first = pid * rows_per_program
    for row in range(first, tl.minimum(first + rows_per_program, n_rows)):
        offsets = tl.cast(row, tl.int64) * stride + cols
        v = tl.load(x + offsets, mask=mask, other=0.0).to(tl.float32)
        g = tl.load(dy + offsets, mask=mask, other=0.0).to(tl.float32)
        r = tl.load(rstd + row)
        xhat = v * r
        wg = scale * g
        c = tl.sum(xhat * wg, axis=0) / n_cols
        tl.store(dx + offsets, ((wg - xhat * c) * r).to(dx.dtype.element_ty), mask=mask)
        dw_acc += g * xhat
    tl.store(dw_part + pid * n_cols + cols, dw_acc, mask=mask)


@triton.jit(launch_metadata=_column_sum_cost)
def column_sum_kernel(part, out, n_parts, n_cols, BLOCK_P: tl.constexpr, BLOCK_N: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for p0 in range(0, n_parts, BLOCK_P):
        parts = p0 + tl.arange(0, BLOCK_P)
        mask = (parts[:, None] < n_parts) & (cols[None, :] < n_cols)
        acc += tl.sum(tl.load(part + parts[:, None] * n_cols + cols[None, :], mask=mask, other=0.0), axis=0)
    tl.store(out + cols, acc.to(out.dtype.element_ty), mask=cols < n_cols)


def _stats(x: torch.Tensor) -> torch.Tensor:
    return torch.empty(x.shape[0], device=x.device, dtype=torch.float32)


def layernorm_fwd(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, eps: float = EPS):
    rows, cols = x.shape
    block = triton.next_power_of_2(cols)
    y, mean, rstd = torch.empty_like(x), _stats(x), _stats(x)
    layernorm_fwd_kernel[(rows,)](x, w, b, y, mean, rstd, cols, x.stride(0), eps, BLOCK=block,
                                  num_warps=row_warps(block))
    return y, mean, rstd


def rmsnorm_fwd(x: torch.Tensor, w: torch.Tensor, eps: float = EPS):
    rows, cols = x.shape
    block = triton.next_power_of_2(cols)
    y, rstd = torch.empty_like(x), _stats(x)
    rmsnorm_fwd_kernel[(rows,)](x, w, y, rstd, cols, x.stride(0), eps, BLOCK=block, num_warps=row_warps(block))
    return y, rstd


def _bands(rows: int, device: torch.device) -> tuple[int, int]:
    """(programs, rows per program): about four bands per SM, each a run of whole rows."""
    per_program = triton.cdiv(rows, min(rows, 4 * processors(device)))
    return triton.cdiv(rows, per_program), per_program


def _column_sum(part: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    n_parts, cols = part.shape
    out = torch.empty(cols, device=part.device, dtype=dtype)
    block_n = min(256, triton.next_power_of_2(cols))
    column_sum_kernel[(triton.cdiv(cols, block_n),)](part, out, n_parts, cols, BLOCK_P=32, BLOCK_N=block_n,
                                                      num_warps=4)
    return out


def layernorm_bwd(dy, x, w, mean, rstd):
    rows, cols = x.shape
    block = triton.next_power_of_2(cols)
    programs, per_program = _bands(rows, x.device)
    dx = torch.empty_like(x)
    dw_part = torch.empty(programs, cols, device=x.device, dtype=torch.float32)
    db_part = torch.empty_like(dw_part)
    layernorm_bwd_kernel[(programs,)](dy, x, w, mean, rstd, dx, dw_part, db_part, rows, cols, x.stride(0),
                                      per_program, BLOCK=block, num_warps=row_warps(block))
    return dx, _column_sum(dw_part, w.dtype), _column_sum(db_part, w.dtype)


def rmsnorm_bwd(dy, x, w, rstd):
    rows, cols = x.shape
    block = triton.next_power_of_2(cols)
    programs, per_program = _bands(rows, x.device)
    dx = torch.empty_like(x)
    dw_part = torch.empty(programs, cols, device=x.device, dtype=torch.float32)
    rmsnorm_bwd_kernel[(programs,)](dy, x, w, rstd, dx, dw_part, rows, cols, x.stride(0), per_program,
                                   BLOCK=block, num_warps=row_warps(block))
    return dx, _column_sum(dw_part, w.dtype)


def _rms_reference(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * w


def _inputs(shape, device, dtype):
    rows, cols = shape["rows"], shape["cols"]
    x = torch.randn(rows, cols, device=device, dtype=dtype) * 2 + 0.5
    w = (1 + 0.1 * torch.randn(cols, device=device)).to(dtype)
    b = (0.1 * torch.randn(cols, device=device)).to(dtype)
    dy = torch.randn(rows, cols, device=device, dtype=dtype)
    mean = x.float().mean(-1)
    rstd = torch.rsqrt(x.float().var(-1, unbiased=False) + EPS)
    rms_rstd = torch.rsqrt(x.float().pow(2).mean(-1) + EPS)
    return {"x": x, "w": w, "b": b, "dy": dy, "mean": mean, "rstd": rstd, "rms_rstd": rms_rstd}


def _grads(fn, tensors, dy):
    """fp32 autograd gradients of fn(*tensors) against dy: the backward references."""
    leaves = [t.detach().float().requires_grad_() for t in tensors]
    return torch.autograd.grad(fn(*leaves), leaves, dy.float())


def _library_backward(fn, names):
    """torch's backward kernels alone: the graph is built once per inputs, then only replayed."""

    def run(inputs):
        key = "_graph_" + "_".join(names)
        if key not in inputs:
            leaves = [inputs[n].detach().requires_grad_() for n in names]
            inputs[key] = (fn(*leaves), leaves)
        out, leaves = inputs[key]
        return torch.autograd.grad(out, leaves, inputs["dy"], retain_graph=True)

    return run


def _ln(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b, EPS)


def _rms(x, w):
    return F.rms_norm(x, (x.shape[-1],), w, EPS)


# 32768 rows of 4096 bf16 = 256 MiB per tensor: four L2s.
SHAPES = {"small": {"rows": 13, "cols": 300}, "large": {"rows": 32768, "cols": 4096}}


def _norm_spec(name: str, concept: str, reference, kernel, library, target: Target | None = None) -> None:
    """The four norm reference kernels share sizes, inputs and dtype; each is its kernel against torch."""
    register(KernelSpec(name=name, concept=concept, family="norm", dtype=torch.bfloat16, shapes=SHAPES,
                    make_inputs=_inputs, reference=reference,
                    variants=(Variant("fused", "triton", "kernel", kernel), library), target=target))


_norm_spec(
    "layernorm_fwd", "fused LayerNorm forward: statistics, normalisation, scale and shift in one pass over each row",
    lambda i: _ln(i["x"].float(), i["w"].float(), i["b"].float()),
    lambda i: layernorm_fwd(i["x"], i["w"], i["b"])[0],
    Variant("torch layer_norm", "torch", "library", lambda i: _ln(i["x"], i["w"], i["b"])),
    Target("roof", 0.80, "LayerNorm forward >= 80% of DRAM bandwidth"))
_norm_spec(
    "rmsnorm_fwd", "fused RMSNorm forward: one pass, no mean, no shift",
    lambda i: _rms_reference(i["x"].float(), i["w"].float()),
    lambda i: rmsnorm_fwd(i["x"], i["w"])[0],
    Variant("torch rms_norm", "torch", "library", lambda i: _rms(i["x"], i["w"])),
    Target("roof", 0.80, "RMSNorm forward >= 80% of DRAM bandwidth"))
_norm_spec(
    "layernorm_bwd", "fused LayerNorm backward: dx per row, dw and db as per-band partial sums, then one small reduction",
    lambda i: _grads(_ln, (i["x"], i["w"], i["b"]), i["dy"]),
    lambda i: layernorm_bwd(i["dy"], i["x"], i["w"], i["mean"], i["rstd"]),
    Variant("torch autograd", "torch", "library", _library_backward(_ln, ("x", "w", "b"))))
_norm_spec(
    "rmsnorm_bwd", "fused RMSNorm backward: dx per row, dw as per-band partial sums",
    lambda i: _grads(_rms_reference, (i["x"], i["w"]), i["dy"]),
    lambda i: rmsnorm_bwd(i["dy"], i["x"], i["w"], i["rms_rstd"]),
    Variant("torch autograd", "torch", "library", _library_backward(_rms, ("x", "w"))))
