"""Int8 weight-only GEMV and GEMM with per-channel scales: half the weight bytes of bf16.

At batch 1 a linear layer reads every weight once and does 2 FLOPs per weight: it is bound by
DRAM, so storing weights as int8 (one byte) with one fp32 scale per output channel halves the
time. The kernels load int8 tiles, widen them in registers, multiply, and apply the scale once
per output at the end (y[n] = scale[n] * sum_k w[n, k] x[k]). The GEMV accumulates on CUDA
cores; the GEMM (a few dozen rows of activations) converts the tile to bf16 for `tl.dot`.

The GEMV has to widen a byte for every two FLOPs, and the int8 -> fp32 conversion instruction
has a fraction of the FMA's throughput: with it the kernel reached 62% of the DRAM roof (92.7 us
on the H200, scripts/kernel_sweep.py), and only integer ops in its place took 10% off. So, as quantised
inference kernels do, the weights are packed once, offline, for the kernel:
- four bytes per int32 word, interleaved so that byte j of word k4 is column j*K4 + k4 (K4 =
  K/4 rounded up, zero-padded): one 4-byte load brings four weights, and the activations each
  byte multiplies are four contiguous slices of x, not a stride-4 gather;
- each byte becomes a float with integer ops only: (byte xor 0x80) placed in the mantissa of
  2**23 is the float 2**23 + 128 + w, and one subtraction gives w exactly.
Best configs measured at N = K = 16384: integer widening alone 83.2 us; with four weights per
load 80.5 us; interleaved 78.5 us; with evict_first on the weights 76.3 us (75.5% of the roof).
Cost: GEMV 2*N*K + N FLOPs in fp32; GEMM 2*M*N*K in bf16 on tensor cores plus M*N fp32 scale
multiplies; bytes: int8 weights (the GEMV's padded words as read), scales, activations read
once, output written once. The library row is the same layer with bf16 weights (F.linear):
twice the weight bytes.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from rooflinectl_kernels.cost import declare, tensor_bytes
from rooflinectl_kernels.registry import KernelSpec, Target, Variant, register, tuned

GEMV_CONFIGS = [  # BLOCK_K4: packed words (4 weights each) per row and step; the sweep's best on the H200
    triton.Config({"BLOCK_N": 2, "BLOCK_K4": 512}, num_warps=4, num_stages=2),
    triton.Config({"BLOCK_N": 4, "BLOCK_K4": 512}, num_warps=4, num_stages=2),
    triton.Config({"BLOCK_N": 2, "BLOCK_K4": 256}, num_warps=2, num_stages=2),
    triton.Config({"BLOCK_N": 4, "BLOCK_K4": 1024}, num_warps=8, num_stages=2),
]
MAGIC_BITS = tl.constexpr(0x4B000080)  # the float 2**23 + 128: xor a byte into it, flipping the top bit
MAGIC_FLOAT = tl.constexpr(8388736.0)  # 2**23 + 128, subtracted to leave the byte's signed value
GEMM_CONFIGS = [
    triton.Config({"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 128}, num_warps=4, num_stages=4),
    triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 128}, num_warps=4, num_stages=4),
    triton.Config({"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64}, num_warps=4, num_stages=5),
]


def _gemv_cost(grid, metadata, args):
    n, k = args["N"], args["K"]
    return declare("int8_gemv_kernel", family="gemm", flops=2 * n * k + n, bits=32,
                   nbytes=tensor_bytes(args["x"], args["w4"], args["scale"], args["y"]))


def _gemm_cost(grid, metadata, args):
    m, n, k = args["M"], args["N"], args["K"]
    return declare("int8_gemm_kernel", family="gemm", flops={16: 2 * m * n * k, 32: m * n}, tensor_core=True,
                   dtype=args["x"].dtype, nbytes=tensor_bytes(args["x"], args["w"], args["scale"], args["y"]))


@triton.jit
def byte_as_float(value):
    """The low byte of an int32 (a signed int8) as an exact fp32, by integer ops and one
    subtraction: (byte xor 0x80) in the mantissa of 2**23 is 2**23 + 128 + w. A zero byte
    (padding, masked loads) gives 0.0."""
    return ((value & 0xFF) ^ MAGIC_BITS).to(tl.float32, bitcast=True) - MAGIC_FLOAT


@triton.autotune(configs=tuned(GEMV_CONFIGS), key=["N", "K"])
@triton.jit(launch_metadata=_gemv_cost)
def int8_gemv_kernel(x, w4, scale, y, N, K, K4, stride_wn, BLOCK_N: tl.constexpr, BLOCK_K4: tl.constexpr):
    """w4: the weights packed by pack_for_gemv ([N, K4] int32, byte j of word k4 = column j*K4 + k4)."""
    rows = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_N, BLOCK_K4), dtype=tl.float32)  # reduced once at the end, not per step
    for k0 in range(0, K4, BLOCK_K4):
        ks = k0 + tl.arange(0, BLOCK_K4)
        # read once: evict_first keeps the weights from pushing x (read by every program) out of L2
        words = tl.load(w4 + rows[:, None].to(tl.int64) * stride_wn + ks[None, :],
                        mask=(rows[:, None] < N) & (ks[None, :] < K4), other=0, eviction_policy="evict_first")
        for j in tl.static_range(4):
            wf = byte_as_float(words >> (8 * j))
            cols = j * K4 + ks
            xv = tl.load(x + cols, mask=(ks < K4) & (cols < K), other=0.0).to(tl.float32)
            acc += wf * xv[None, :]
    out = tl.sum(acc, axis=1) * tl.load(scale + rows, mask=rows < N, other=0.0)
    tl.store(y + rows, out.to(y.dtype.element_ty), mask=rows < N)


@triton.autotune(configs=tuned(GEMM_CONFIGS), key=["M", "N", "K"])
@triton.jit(launch_metadata=_gemm_cost)
def int8_gemm_kernel(x, w, scale, y, M, N, K, stride_xm, stride_wn, stride_ym,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(x + rows[:, None] * stride_xm + ks[None, :], mask=(rows[:, None] < M) & (ks[None, :] < K),
                    other=0.0)
        # W^T tile [BLOCK_K, BLOCK_N] of the [N, K] int8 weights, widened to the activations' dtype.
        b = tl.load(w + cols[None, :].to(tl.int64) * stride_wn + ks[:, None],
                    mask=(cols[None, :] < N) & (ks[:, None] < K), other=0)
        acc = tl.dot(a, b.to(tl.float32).to(a.dtype), acc)
    out = acc * tl.load(scale + cols, mask=cols < N, other=0.0)[None, :]
    tl.store(y + rows[:, None] * stride_ym + cols[None, :], out.to(y.dtype.element_ty),
             mask=(rows[:, None] < M) & (cols[None, :] < N))


def pack_for_gemv(w: torch.Tensor) -> torch.Tensor:
    """int8 [N, K] -> int32 [N, K4], K4 = ceil(K / 4): byte j (little-endian) of word k4 holds
    column j*K4 + k4, zero-padded; done once when the weights are quantised, not per call."""
    n, k = w.shape
    k4 = triton.cdiv(k, 4)
    padded = torch.zeros(n, 4 * k4, dtype=torch.int8, device=w.device)
    padded[:, :k] = w
    return padded.view(n, 4, k4).transpose(1, 2).contiguous().view(torch.int32).view(n, k4)


def int8_gemv(x: torch.Tensor, w4: torch.Tensor, scale: torch.Tensor, k: int) -> torch.Tensor:
    """y = x @ (w * scale[:, None]).T for one row x [1, K], weights packed by pack_for_gemv."""
    n, k4 = w4.shape
    y = torch.empty(1, n, device=x.device, dtype=x.dtype)
    int8_gemv_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK_N"]),)](x, w4, scale, y, n, k, k4, w4.stride(0))
    return y


def int8_linear(x: torch.Tensor, w: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """y = x @ (w * scale[:, None]).T for int8 w [N, K], fp32 scale [N], x [M, K] (M > 1)."""
    (m, k), n = x.shape, w.shape[0]
    y = torch.empty(m, n, device=x.device, dtype=x.dtype)
    int8_gemm_kernel[lambda meta: (triton.cdiv(m, meta["BLOCK_M"]), triton.cdiv(n, meta["BLOCK_N"]))](
        x, w, scale, y, m, n, k, x.stride(0), w.stride(0), y.stride(0))
    return y


def quantize_per_channel(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric int8 per output channel: scale = max|w| / 127 per row."""
    scale = weight.abs().amax(dim=1).clamp_min(1e-8) / 127.0
    return torch.round(weight / scale[:, None]).clamp(-127, 127).to(torch.int8), scale.float()


def _inputs(shape, device, dtype):
    w, scale = quantize_per_channel(torch.randn(shape["N"], shape["K"], device=device) * 0.02)
    x = torch.randn(shape["M"], shape["K"], device=device, dtype=dtype)
    dequantised = (w.float() * scale[:, None]).to(dtype)
    packed = pack_for_gemv(w) if shape["M"] == 1 else None
    return {"x": x, "w": w, "w_packed": packed, "scale": scale, "w_dequantised": dequantised}


def _reference(inputs):
    return inputs["x"].float() @ (inputs["w"].float() * inputs["scale"][:, None]).T


def _bf16_linear_cost(inputs):
    x, w16 = inputs["x"], inputs["w_dequantised"]
    m, n, k = x.shape[0], w16.shape[0], x.shape[1]
    return declare("F.linear", family="gemm", flops=2 * m * n * k, bits=16, tensor_core=True, dtype=x.dtype,
                   nbytes=tensor_bytes(x, w16) + m * n * x.element_size())


def _variants(name: str) -> tuple[Variant, ...]:
    if name == "gemv":
        spec = Variant("int8 gemv", "triton", "kernel",
                         lambda i: int8_gemv(i["x"], i["w_packed"], i["scale"], i["w"].shape[1]),
                         autotuned=(int8_gemv_kernel,), note="weights packed once for the kernel (pack_for_gemv)")
    else:
        spec = Variant("int8 gemm", "triton", "kernel", lambda i: int8_linear(i["x"], i["w"], i["scale"]),
                         autotuned=(int8_gemm_kernel,))
    return (
        spec,
        Variant("bf16 F.linear", "torch", "library", lambda i: F.linear(i["x"], i["w_dequantised"]),
                cost=_bf16_linear_cost, note="the same layer with bf16 weights: twice the weight bytes"),
    )


register(KernelSpec(
    name="int8_gemv",
    concept="weight-only int8 at batch 1: DRAM-bound, so half the weight bytes is half the time",
    family="gemm",
    dtype=torch.bfloat16,
    shapes={"small": {"M": 1, "N": 50, "K": 300}, "large": {"M": 1, "N": 16384, "K": 16384}},  # 256 MiB int8
    make_inputs=_inputs,
    reference=_reference,
    variants=_variants("gemv"),
    target=Target("roof", 0.75, "int8 weight-only GEMV >= 75% of DRAM bandwidth at batch 1"),
))

register(KernelSpec(
    name="int8_gemm",
    concept="weight-only int8 for a few dozen tokens: int8 tiles widened to bf16 for the tensor cores",
    family="gemm",
    dtype=torch.bfloat16,
    shapes={"small": {"M": 20, "N": 70, "K": 200}, "large": {"M": 64, "N": 16384, "K": 16384}},
    make_inputs=_inputs,
    reference=_reference,
    variants=_variants("gemm"),
    uses_dot=True,
    tolerance_scale=2.0,
))
