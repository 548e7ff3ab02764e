"""Grouped GEMM for mixture-of-experts: every expert's matmul in one launch, no padding.

After routing, expert e owns a run of m_e consecutive token rows (sorted by expert) and
multiplies them by its own weight W_e. The counts are skewed: a few experts get thousands of
tokens, most get a few dozen. A loop of per-expert torch matmuls pays a launch (and the host
loop) per expert and runs the small ones at a fraction of the tensor-core rate; padding every
expert to the largest count wastes FLOPs. This kernel is persistent: one program per SM walks
the tiles of all experts in turn (expert by expert, BLOCK_M rows at a time, the last tile of an
expert masked), so the whole layer is one launch whatever the distribution.
Cost: 2 * tokens * N * K FLOPs in bf16 on tensor cores; bytes: tokens, every expert's weights
(every expert here has at least one token) and the output once, plus the counts and offsets.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from rooflinectl_kernels.cost import declare, tensor_bytes
from rooflinectl_kernels.registry import KernelSpec, Target, Variant, processors, register, tuned

GROUPED_CONFIGS = [
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}, num_warps=8, num_stages=3),
    triton.Config({"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64}, num_warps=4, num_stages=4),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64}, num_warps=8, num_stages=3),
]


def _grouped_cost(grid, metadata, args):
    x = args["x"]
    return declare("grouped_gemm_kernel", family="gemm", flops=2 * x.shape[0] * args["N"] * args["K"], bits=16, tensor_core=True,
                   dtype=x.dtype, nbytes=tensor_bytes(x, args["w"], args["y"], args["counts"], args["offsets"]))


@triton.autotune(configs=tuned(GROUPED_CONFIGS), key=["n_tokens", "n_experts", "N", "K"])
@triton.jit(launch_metadata=_grouped_cost)
def grouped_gemm_kernel(x, w, y, counts, offsets, n_tokens, n_experts, N, K, NUM_PROGRAMS: tl.constexpr,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    tile = tl.program_id(0)  # this program's next tile, in the order of all experts' tiles
    tiles_n = tl.cdiv(N, BLOCK_N)
    before = 0  # tiles of the experts already passed
    for e in range(0, n_experts):
        rows_e = tl.load(counts + e)
        first_row = tl.load(offsets + e)
        tiles_e = tl.cdiv(rows_e, BLOCK_M) * tiles_n
        w_e = w + tl.cast(e, tl.int64) * K * N
        while (tile >= before) & (tile < before + tiles_e):
            local = tile - before
            in_expert = (local // tiles_n) * BLOCK_M + tl.arange(0, BLOCK_M)
            row_ok = in_expert < rows_e
            rows = (first_row + in_expert).to(tl.int64)
            cols = (local % tiles_n) * BLOCK_N + tl.arange(0, BLOCK_N)
            acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            for k0 in range(0, K, BLOCK_K):
                ks = k0 + tl.arange(0, BLOCK_K)
                a = tl.load(x + rows[:, None] * K + ks[None, :], mask=row_ok[:, None] & (ks[None, :] < K), other=0.0)
                b = tl.load(w_e + ks[:, None] * N + cols[None, :], mask=(ks[:, None] < K) & (cols[None, :] < N),
                            other=0.0)
                acc = tl.dot(a, b, acc)
            tl.store(y + rows[:, None] * N + cols[None, :], acc.to(y.dtype.element_ty),
                     mask=row_ok[:, None] & (cols[None, :] < N))
            tile += NUM_PROGRAMS
        before += tiles_e


def grouped_gemm(x: torch.Tensor, w: torch.Tensor, counts: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
    """x [tokens, K] sorted by expert; w [experts, K, N]; counts/offsets int32 [experts] on the device."""
    n_tokens, k = x.shape
    n_experts, _, n = w.shape
    y = torch.empty(n_tokens, n, device=x.device, dtype=x.dtype)
    programs = processors(x.device)
    grouped_gemm_kernel[(programs,)](x, w, y, counts, offsets, n_tokens, n_experts, n, k, NUM_PROGRAMS=programs)
    return y


def expert_loop(x: torch.Tensor, w: torch.Tensor, counts: list[int]) -> torch.Tensor:
    """What one writes without a grouped kernel: a torch matmul per expert (host loop)."""
    y = torch.empty(x.shape[0], w.shape[2], device=x.device, dtype=x.dtype)
    start = 0
    for e, rows in enumerate(counts):
        torch.matmul(x[start:start + rows], w[e], out=y[start:start + rows])
        start += rows
    return y


def skewed_counts(tokens: int, experts: int, skew: float = 1.2) -> list[int]:
    """Tokens per expert, Zipf-like (expert e gets a share proportional to (e+1)^-skew), each at least one."""
    weights = [(e + 1) ** -skew for e in range(experts)]
    counts = [max(1, int(tokens * wt / sum(weights))) for wt in weights]
    counts[0] += tokens - sum(counts)
    return counts


def _inputs(shape, device, dtype):
    counts = skewed_counts(shape["tokens"], shape["experts"])
    offsets = [sum(counts[:e]) for e in range(len(counts))]
    scale = shape["K"] ** -0.25
    return {
        "x": (torch.randn(shape["tokens"], shape["K"], device=device) * scale).to(dtype),
        "w": (torch.randn(shape["experts"], shape["K"], shape["N"], device=device) * scale).to(dtype),
        "counts_list": counts,
        "counts": torch.tensor(counts, device=device, dtype=torch.int32),
        "offsets": torch.tensor(offsets, device=device, dtype=torch.int32),
    }


register(KernelSpec(
    name="grouped_gemm",
    concept="MoE grouped GEMM: all experts' variable-size matmuls in one persistent launch, no padding",
    family="gemm",
    dtype=torch.bfloat16,
    # 16384 tokens over 64 experts (the largest gets 4.6k, the smallest 31), 4096 -> 1024
    shapes={"small": {"tokens": 50, "experts": 5, "K": 32, "N": 48},
            "large": {"tokens": 16384, "experts": 64, "K": 4096, "N": 1024}},
    make_inputs=_inputs,
    reference=lambda i: expert_loop(i["x"].float(), i["w"].float(), i["counts_list"]),
    variants=(
        Variant("grouped", "triton", "kernel", lambda i: grouped_gemm(i["x"], i["w"], i["counts"], i["offsets"]),
                autotuned=(grouped_gemm_kernel,)),
        Variant("torch loop", "torch", "library", lambda i: expert_loop(i["x"], i["w"], i["counts_list"]),
                note="one torch.matmul per expert"),
    ),
    uses_dot=True,
    target=Target("library", 1.5, "grouped GEMM >= 1.5x a loop of per-expert torch matmuls, skewed experts"),
))
