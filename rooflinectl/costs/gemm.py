"""Matrix products: FLOPs from PyTorch's registry where it has the op (mm, addmm, bmm, baddbmm,
_scaled_mm), our own 2*M*N*K arithmetic where it has not (mv, addmv, addbmm, dot, outer,
_addmm_activation, _int_mm, _grouped_mm).

Bytes: each operand read once and the output written once, the traffic of a perfect tiling
(a GEMM that re-reads its operands from DRAM does more). The additive term of addmm and its
kin (beta*self) is read but its add not counted, as flop_counter does.
"""

from __future__ import annotations

import math

from rooflinectl.costs.registry import OpCost, cost_formula
from rooflinectl.costs.tensors import OpCall, TensorArg, out_itemsize, unique_read_bytes
from rooflinectl.costs.torch_flops import torch_flops


def gemm_cost(a: TensorArg, flops: float, out_numel: int, reads: list[TensorArg | None], note: str,
              out_itemsize: int | None = None) -> OpCost:
    """Reads each operand once, writes the output once; the math runs in A's dtype."""
    written = out_numel * (out_itemsize or a.itemsize)
    read = unique_read_bytes(t for t in reads if t is not None)
    return OpCost(float(flops), float(read + written), "gemm", a.dtype, note)


@cost_formula("aten::mm", family="gemm")
def mm_cost(call: OpCall) -> OpCost | None:
    """(self [M, K], mat2 [K, N]): 2*M*N*K (flop_counter); reads both, writes [M, N] (out_dtype's
    size for the .dtype overload)."""
    a, b = call.input("self"), call.input("mat2")
    m, n = a.shape[0], b.shape[1]
    return gemm_cost(a, torch_flops(call), m * n, [a, b], "mm: 2*M*N*K (flop_counter)",
                     out_itemsize(call, a.itemsize))


@cost_formula("aten::addmm", family="gemm")
def addmm_cost(call: OpCall) -> OpCost | None:
    """(self, mat1 [M, K], mat2 [K, N]): 2*M*N*K (flop_counter; the add of self not counted);
    reads self (a broadcast bias reads its [N] source once), mat1, mat2; writes [M, N]."""
    bias, a, b = call.input("self"), call.input("mat1"), call.input("mat2")
    return gemm_cost(a, torch_flops(call), a.shape[0] * b.shape[1], [bias, a, b],
                     "addmm: 2*M*N*K (flop_counter), bias add not counted", out_itemsize(call, a.itemsize))


@cost_formula("aten::_addmm_activation", family="gemm")
def addmm_activation_cost(call: OpCall) -> OpCost | None:
    """addmm fused with ReLU or GELU (use_gelu): 2*M*N*K, plus GELU's 5 FLOP per output element
    (the element-wise convention: ReLU counts 0); reads self, mat1, mat2, writes [M, N] once."""
    bias, a, b = call.input("self"), call.input("mat1"), call.input("mat2")
    m, k = a.shape
    n = b.shape[1]
    gelu = bool(call.get("use_gelu", False))
    flops = 2 * m * n * k + (5 * m * n if gelu else 0)
    return gemm_cost(a, flops, m * n, [bias, a, b],
                     f"addmm + {'GELU' if gelu else 'ReLU'}: 2*M*N*K (+ 5 FLOP/element for GELU)")


@cost_formula("aten::bmm", family="gemm")
def bmm_cost(call: OpCall) -> OpCost | None:
    """(self [B, M, K], mat2 [B, K, N]): 2*B*M*N*K (flop_counter); reads both, writes [B, M, N]."""
    a, b = call.input("self"), call.input("mat2")
    batch, m, _ = a.shape
    return gemm_cost(a, torch_flops(call), batch * m * b.shape[2], [a, b], "bmm: 2*B*M*N*K (flop_counter)",
                     out_itemsize(call, a.itemsize))


@cost_formula("aten::baddbmm", family="gemm")
def baddbmm_cost(call: OpCall) -> OpCost | None:
    """(self, batch1 [B, M, K], batch2 [B, K, N]): 2*B*M*N*K (flop_counter); reads self, batch1,
    batch2, writes [B, M, N]."""
    c, a, b = call.input("self"), call.input("batch1"), call.input("batch2")
    batch, m, _ = a.shape
    return gemm_cost(a, torch_flops(call), batch * m * b.shape[2], [c, a, b], "baddbmm: 2*B*M*N*K (flop_counter)",
                     out_itemsize(call, a.itemsize))


@cost_formula("aten::addbmm", family="gemm")
def addbmm_cost(call: OpCall) -> OpCost | None:
    """(self [M, N], batch1 [B, M, K], batch2 [B, K, N]): the B products summed into one [M, N]:
    2*B*M*N*K (not in flop_counter); reads self, batch1, batch2, writes [M, N] once."""
    c, a, b = call.input("self"), call.input("batch1"), call.input("batch2")
    batch, m, k = a.shape
    n = b.shape[2]
    return gemm_cost(a, 2 * batch * m * n * k, m * n, [c, a, b], "addbmm: 2*B*M*N*K, one [M, N] output")


@cost_formula("aten::_scaled_mm", family="gemm")
def scaled_mm_cost(call: OpCall) -> OpCost | None:
    """fp8 GEMM (self [M, K], mat2 [K, N], scale_a, scale_b, bias, scale_result, out_dtype):
    2*M*N*K (flop_counter); reads every tensor argument, writes [M, N] in out_dtype (default:
    self's dtype)."""
    a, b = call.input("self"), call.input("mat2")
    reads = [call.input(n) for n in ("self", "mat2", "scale_a", "scale_b", "bias", "scale_result")]
    return gemm_cost(a, torch_flops(call), a.shape[0] * b.shape[1], reads, "_scaled_mm: 2*M*N*K (flop_counter)",
                     out_itemsize(call, a.itemsize))


@cost_formula("aten::_int_mm", family="gemm")
def int_mm_cost(call: OpCall) -> OpCost | None:
    """int8 GEMM (self [M, K], mat2 [K, N]): 2*M*N*K integer ops (not in flop_counter); int32 output."""
    a, b = call.input("self"), call.input("mat2")
    m, k = a.shape
    n = b.shape[1]
    return gemm_cost(a, 2 * m * n * k, m * n, [a, b], "_int_mm: 2*M*N*K int8 ops, int32 output", out_itemsize=4)


@cost_formula("aten::mv", family="gemm")
def mv_cost(call: OpCall) -> OpCost | None:
    """(self [M, N], vec [N]): 2*M*N; reads the matrix and the vector once, writes [M]."""
    a, x = call.input("self"), call.input("vec")
    m, n = a.shape
    return gemm_cost(a, 2 * m * n, m, [a, x], "mv: 2*M*N")


@cost_formula("aten::addmv", family="gemm")
def addmv_cost(call: OpCall) -> OpCost | None:
    """(self [M], mat [M, N], vec [N]): 2*M*N (the add of self not counted); reads all, writes [M]."""
    c, a, x = call.input("self"), call.input("mat"), call.input("vec")
    m, n = a.shape
    return gemm_cost(a, 2 * m * n, m, [c, a, x], "addmv: 2*M*N, add of self not counted")


@cost_formula("aten::dot", "aten::vdot", family="gemm")
def dot_cost(call: OpCall) -> OpCost | None:
    """(self [N], tensor/other [N]): 2*N; reads both vectors, writes one element."""
    a = call.input("self")
    b = call.input("tensor") or call.input("other")
    return gemm_cost(a, 2 * a.numel, 1, [a, b], "dot: 2*N")


@cost_formula("aten::outer", "aten::ger", "aten::addr", family="gemm")
def outer_cost(call: OpCall) -> OpCost | None:
    """outer/ger (self [M], vec2 [N]): one multiply per output element; addr (self [M, N], vec1,
    vec2): multiply and add, 2 per element. Reads the vectors (and self), writes [M, N]."""
    if call.name == "aten::addr":
        c, u, v = call.input("self"), call.input("vec1"), call.input("vec2")
        per_element, reads = 2, [c, u, v]
    else:
        u, v = call.input("self"), call.input("vec2")
        per_element, reads = 1, [u, v]
    m, n = u.numel, v.numel
    return gemm_cost(u, per_element * m * n, m * n, reads, f"outer product: {per_element} FLOP per output element")


def grouped_mm_shape(a: tuple[int, ...], b: tuple[int, ...], groups: int) -> tuple[tuple[int, ...], int]:
    """(output shape, FLOPs) of torch._grouped_mm: each group multiplies its slice of A by its
    slice of B. 2-d x 3-d (MoE forward: rows of A split by offs, one [K, N] weight per group),
    3-d x 2-d (columns of B split), 2-d x 2-d (K split: per-group weight gradients), 3-d x 3-d
    (a plain batched GEMM). The split dimension sums to the whole, so FLOPs are 2*M*N*K over
    the whole split extent."""
    if len(a) == 2 and len(b) == 3:
        (m, k), n = a, b[2]
        return (m, n), 2 * m * n * k
    if len(a) == 3 and len(b) == 2:
        (_, m, k), n = a, b[1]
        return (m, n), 2 * m * n * k
    if len(a) == 2 and len(b) == 2:
        (m, k), n = a, b[1]
        return (groups, m, n), 2 * m * n * k
    g, m, k = a
    n = b[2]
    return (g, m, n), 2 * g * m * n * k


@cost_formula("aten::_grouped_mm", "aten::_scaled_grouped_mm", family="gemm")
def grouped_mm_cost(call: OpCall) -> OpCost | None:
    """(self, mat2, [scale_a, scale_b,] offs, bias, ..., out_dtype): 2*M*N*K summed over the
    groups (grouped_mm_shape; not in flop_counter); reads both operands (every group's weights,
    even a group that got no rows), offs, scales and bias once; writes the output once in
    out_dtype (default: self's dtype)."""
    a, b, offs = call.input("self"), call.input("mat2"), call.input("offs")
    groups = offs.numel if offs is not None else 1
    out, flops = grouped_mm_shape(a.shape, b.shape, groups)
    reads = [call.input(n) for n in ("self", "mat2", "offs", "bias", "scale_a", "scale_b", "scale_result")]
    return gemm_cost(a, flops, math.prod(out), reads, "grouped mm: 2*M*N*K over all groups",
                     out_itemsize(call, a.itemsize))
