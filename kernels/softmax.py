"""Fused softmax: one read and one write per element instead of a pass per step.

Unfused, softmax is three trips through DRAM: a pass for the row maximum, a pass for the
exponentials and their sum (written out), a pass to divide. The fused kernel keeps a whole row
in registers: it reads x once and writes y once. For rows too long to hold, the online softmax
keeps a running maximum and a running sum, rescaling the sum when the maximum grows, so one
pass gives both and a second writes the output (the naive long-row kernel needs three).
Each kernel declares its own minimum traffic. The separate passes declare, launch by launch,
what they must move between them (x read twice, the exponentials written and read back: about
2.5x the op's minimum), since a profile of such code holds each launch to that; the reference kernel run
holds the variant to the op's minimum (the fused kernel's declaration) and shows their own
traffic beside it (kernels/cost.py). The three-pass long-row kernel re-reads x within one
launch and declares the minimum.
FLOPs follow the cost model: 4 per element (subtract, exp, add, divide); maxima are comparisons.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from rooflinectl_kernels.cost import declare, tensor_bytes
from rooflinectl_kernels.registry import KernelSpec, Target, Variant, register, row_warps


def _fused_cost(grid, metadata, args):
    x = args["x"]
    return declare("softmax_fused_kernel", family="softmax", nbytes=2 * tensor_bytes(x), flops=4 * x.numel(), bits=32)


def _max_cost(grid, metadata, args):
    return declare("softmax_row_max_kernel", family="softmax", nbytes=tensor_bytes(args["x"], args["row_max"]))


def _exp_sum_cost(grid, metadata, args):
    x = args["x"]
    return declare("softmax_exp_sum_kernel", family="softmax",
                   nbytes=tensor_bytes(x, args["row_max"], args["e"], args["row_sum"]), flops=3 * x.numel(), bits=32)


def _divide_cost(grid, metadata, args):
    e = args["e"]
    return declare("softmax_divide_kernel", family="softmax", nbytes=tensor_bytes(e, args["row_sum"], args["y"]), flops=e.numel(),
                   bits=32)


def _online_cost(grid, metadata, args):
    x = args["x"]
    return declare("softmax_online_kernel", family="softmax", nbytes=2 * tensor_bytes(x), flops=4 * x.numel(), bits=32)


def _three_pass_cost(grid, metadata, args):
    x = args["x"]
    return declare("softmax_three_pass_kernel", family="softmax", nbytes=2 * tensor_bytes(x), flops=4 * x.numel(), bits=32)


@triton.jit(launch_metadata=_fused_cost)
def softmax_fused_kernel(x, y, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    v = tl.load(x + row * stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    e = tl.exp(v - tl.max(v, axis=0))
    tl.store(y + row * stride + cols, (e / tl.sum(e, axis=0)).to(y.dtype.element_ty), mask=mask)


@triton.jit(launch_metadata=_max_cost)
def softmax_row_max_kernel(x, row_max, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    v = tl.load(x + row * stride + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
    tl.store(row_max + row, tl.max(v, axis=0))


@triton.jit(launch_metadata=_exp_sum_cost)
def softmax_exp_sum_kernel(x, row_max, e, row_sum, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    v = tl.load(x + row * stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    ex = tl.exp(v - tl.load(row_max + row))
    tl.store(e + row * stride + cols, ex.to(e.dtype.element_ty), mask=mask)
    tl.store(row_sum + row, tl.sum(ex, axis=0))


@triton.jit(launch_metadata=_divide_cost)
def softmax_divide_kernel(e, row_sum, y, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    v = tl.load(e + row * stride + cols, mask=mask).to(tl.float32)
    tl.store(y + row * stride + cols, (v / tl.load(row_sum + row)).to(y.dtype.element_ty), mask=mask)


@triton.jit(launch_metadata=_online_cost)
def softmax_online_kernel(x, y, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = x + row * stride
    # Pass 1: per lane, a running maximum m and a running sum s of exp(x - m), rescaled when m grows.
    m = tl.full([BLOCK], -float("inf"), tl.float32)
    s = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        v = tl.load(base + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, v)
        s = s * tl.exp(tl.where(m_new == -float("inf"), 0.0, m - m_new)) + tl.where(v == -float("inf"), 0.0, tl.exp(v - m_new))
        m = m_new
    row_max = tl.max(m, axis=0)
    row_sum = tl.sum(s * tl.exp(tl.where(m == -float("inf"), -float("inf"), m - row_max)), axis=0)
    # Pass 2: write.
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        v = tl.load(base + cols, mask=mask, other=-float("inf")).to(tl.float32)
        tl.store(y + row * stride + cols, (tl.exp(v - row_max) / row_sum).to(y.dtype.element_ty), mask=mask)


@triton.jit(launch_metadata=_three_pass_cost)
def softmax_three_pass_kernel(x, y, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = x + row * stride
    m = tl.full([BLOCK], -float("inf"), tl.float32)
    for start in range(0, n_cols, BLOCK):  # pass 1: the maximum
        cols = start + tl.arange(0, BLOCK)
        m = tl.maximum(m, tl.load(base + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32))
    row_max = tl.max(m, axis=0)
    s = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):  # pass 2: the sum of exponentials
        cols = start + tl.arange(0, BLOCK)
        v = tl.load(base + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
        s += tl.exp(v - row_max)
    row_sum = tl.sum(s, axis=0)
    for start in range(0, n_cols, BLOCK):  # pass 3: write
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        v = tl.load(base + cols, mask=mask, other=-float("inf")).to(tl.float32)
        tl.store(y + row * stride + cols, (tl.exp(v - row_max) / row_sum).to(y.dtype.element_ty), mask=mask)


def softmax_fused(x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    block = triton.next_power_of_2(cols)
    y = torch.empty_like(x)
    softmax_fused_kernel[(rows,)](x, y, cols, x.stride(0), BLOCK=block, num_warps=row_warps(block))
    return y


def softmax_separate_passes(x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    block = triton.next_power_of_2(cols)
    warps = row_warps(block)
    row_max = torch.empty(rows, device=x.device, dtype=torch.float32)
    row_sum = torch.empty(rows, device=x.device, dtype=torch.float32)
    e, y = torch.empty_like(x), torch.empty_like(x)
    softmax_row_max_kernel[(rows,)](x, row_max, cols, x.stride(0), BLOCK=block, num_warps=warps)
    softmax_exp_sum_kernel[(rows,)](x, row_max, e, row_sum, cols, x.stride(0), BLOCK=block, num_warps=warps)
    softmax_divide_kernel[(rows,)](e, row_sum, y, cols, x.stride(0), BLOCK=block, num_warps=warps)
    return y


def _long_rows(kernel, x: torch.Tensor, block: int) -> torch.Tensor:
    """A program per row, walking it `block` columns at a time."""
    rows, cols = x.shape
    y = torch.empty_like(x)
    kernel[(rows,)](x, y, cols, x.stride(0), BLOCK=min(block, triton.next_power_of_2(cols)), num_warps=8)
    return y


def softmax_online(x: torch.Tensor, block: int = 4096) -> torch.Tensor:
    return _long_rows(softmax_online_kernel, x, block)


def softmax_three_pass(x: torch.Tensor, block: int = 4096) -> torch.Tensor:
    return _long_rows(softmax_three_pass_kernel, x, block)


def _inputs(shape, device, dtype):
    return {"x": torch.randn(shape["rows"], shape["cols"], device=device, dtype=dtype) * 3}


def _reference(inputs):
    return torch.softmax(inputs["x"].float(), dim=-1)


register(KernelSpec(
    name="softmax",
    concept="fused softmax: a row in registers, one read and one write instead of three passes",
    family="softmax",
    dtype=torch.bfloat16,
    # 16384 x 8192 bf16 = 256 MiB in, 256 MiB out
    shapes={"small": {"rows": 9, "cols": 300}, "large": {"rows": 16384, "cols": 8192}},
    make_inputs=_inputs,
    reference=_reference,
    variants=(
        Variant("fused", "triton", "kernel", lambda i: softmax_fused(i["x"])),
        Variant("separate passes", "triton", "twin", lambda i: softmax_separate_passes(i["x"]),
                note="max, exp+sum, divide: three kernels, the exponentials round-trip through DRAM"),
        Variant("torch softmax", "torch", "library", lambda i: torch.softmax(i["x"], dim=-1)),
    ),
    target=Target("roof", 0.85, "fused softmax >= 85% of DRAM bandwidth"),
    atol_scale=1e-3,  # outputs well below 1
))

register(KernelSpec(
    name="softmax_long",
    concept="online softmax: rows too long for registers, maximum and sum in one pass",
    family="softmax",
    dtype=torch.bfloat16,
    # 1024 rows of 131072 bf16 (256 KiB each) = 256 MiB
    shapes={"small": {"rows": 5, "cols": 1000, "block": 256}, "large": {"rows": 1024, "cols": 131072, "block": 4096}},
    make_inputs=_inputs,
    reference=_reference,
    variants=(
        Variant("online", "triton", "kernel", lambda i: softmax_online(i["x"], i["shape"]["block"])),
        Variant("three passes", "triton", "twin", lambda i: softmax_three_pass(i["x"], i["shape"]["block"]),
                note="maximum, sum, write: reads each row three times"),
        Variant("torch softmax", "torch", "library", lambda i: torch.softmax(i["x"], dim=-1)),
    ),
    atol_scale=1e-3,  # outputs well below 1
))
