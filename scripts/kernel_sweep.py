"""Sweep kernel variants and launch configs for the two reference kernels that miss their targets
(issue 13): the int8 weight-only GEMV (int8 -> fp32 conversion variants) and the coalesced copy
(block sizes, warps, cache hints, persistent grid). GPU only; measurement, not a test.
The sweep of 2026-11-30 (docs/benchmarks/data/) also had the interleaved kernel without evict_first,
since folded into the reference kernel.

Timing is the harness's: triton.testing.do_bench, median, L2 flushed between calls. Each line of
output is JSON: {"kernel", "variant", "config", "us", "tb_s", "ok"}; bytes are the op's minimum
(the same the reference kernels declare). Usage: python3 scripts/kernel_sweep.py [--only gemv|copy]
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys

import torch
import triton
import triton.language as tl

from rooflinectl_kernels.harness import time_call
from rooflinectl_kernels.quantized import _gemv_cost, byte_as_float, int8_gemv_kernel, pack_for_gemv


@triton.jit
def gemv_bytes_kernel(x, w, scale, y, N, K, stride_wn, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                      MAGIC: tl.constexpr):
    """int8 loads; each byte widened by the conversion instruction (MAGIC=False, the first reference kernel
    kernel) or by integer ops (the byte xor 0x80 in the mantissa of 2**23, minus 2**23 + 128)."""
    rows = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_N, BLOCK_K), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + tl.arange(0, BLOCK_K)
        wv = tl.load(w + rows[:, None].to(tl.int64) * stride_wn + ks[None, :],
                     mask=(rows[:, None] < N) & (ks[None, :] < K), other=0)
        wf = byte_as_float(wv.to(tl.int32)) if MAGIC else wv.to(tl.float32)
        xv = tl.load(x + ks, mask=ks < K, other=0.0).to(tl.float32)
        acc += wf * xv[None, :]
    out = tl.sum(acc, axis=1) * tl.load(scale + rows, mask=rows < N, other=0.0)
    tl.store(y + rows, out.to(y.dtype.element_ty), mask=rows < N)


@triton.jit
def gemv_packed_kernel(x, w32, scale, y, N, K4, stride_wn4, BLOCK_N: tl.constexpr, BLOCK_K4: tl.constexpr):
    """Four int8 weights per int32 load, unpacked by shifts and the same magic-number conversion."""
    rows = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_N, BLOCK_K4), dtype=tl.float32)
    for k0 in range(0, K4, BLOCK_K4):
        ks = k0 + tl.arange(0, BLOCK_K4)
        packed = tl.load(w32 + rows[:, None].to(tl.int64) * stride_wn4 + ks[None, :],
                         mask=(rows[:, None] < N) & (ks[None, :] < K4), other=0)
        for j in tl.static_range(4):
            wf = byte_as_float(packed >> (8 * j))
            xv = tl.load(x + ks * 4 + j, mask=ks < K4, other=0.0).to(tl.float32)
            acc += wf * xv[None, :]
    out = tl.sum(acc, axis=1) * tl.load(scale + rows, mask=rows < N, other=0.0)
    tl.store(y + rows, out.to(y.dtype.element_ty), mask=rows < N)


@triton.jit
def copy_kernel(src, dst, n, BLOCK: tl.constexpr, HINTS: tl.constexpr):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    if HINTS:
        v = tl.load(src + offsets, mask=mask, eviction_policy="evict_first")
        tl.store(dst + offsets, v, mask=mask, cache_modifier=".cs")
    else:
        tl.store(dst + offsets, tl.load(src + offsets, mask=mask), mask=mask)


@triton.jit
def copy_persistent_kernel(src, dst, n, BLOCK: tl.constexpr, HINTS: tl.constexpr):
    start = tl.program_id(0)
    step = tl.num_programs(0)
    for block in range(start, tl.cdiv(n, BLOCK), step):
        offsets = block * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        if HINTS:
            v = tl.load(src + offsets, mask=mask, eviction_policy="evict_first")
            tl.store(dst + offsets, v, mask=mask, cache_modifier=".cs")
        else:
            tl.store(dst + offsets, tl.load(src + offsets, mask=mask), mask=mask)


def bench_us(fn) -> float:
    """The reference kernels' timing (kernels/harness.py), in microseconds."""
    return time_call(fn, torch.device("cuda")) * 1e6


def _gemv_problem(n: int, k: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """int8 weights [N, K], fp32 scales, one bf16 row x, and the exact answer."""
    w = torch.randint(-127, 128, (n, k), device="cuda", dtype=torch.int8)
    scale = torch.rand(n, device="cuda") * 0.01
    x = torch.randn(1, k, device="cuda", dtype=torch.bfloat16)
    return w, scale, x, (x.float() @ w.float().T) * scale


def _trial(variant: str, config: dict, run, y: torch.Tensor, want: torch.Tensor, nbytes: float) -> None:
    """Run once, check against the answer, time, print one line (or the reason it did not compile)."""
    try:
        run()
        ok = bool(torch.allclose(y.float(), want, rtol=2e-2, atol=2e-2 * float(want.abs().max())))
        emit("gemv", variant, config, bench_us(run), nbytes, ok)
    except Exception as exc:  # noqa: BLE001 - a config that does not compile is a result too
        print(json.dumps({"kernel": "gemv", "variant": variant, "config": config,
                          "error": str(exc).splitlines()[0][:200]}), flush=True)


def emit(kernel: str, variant: str, config: dict, us: float, nbytes: int, ok: bool) -> None:
    print(json.dumps({"kernel": kernel, "variant": variant, "config": config, "us": round(us, 2),
                      "tb_s": round(nbytes / (us * 1e-6) / 1e12, 3), "ok": ok}), flush=True)


def sweep_gemv(n: int = 16384, k: int = 16384) -> None:
    """Byte loads widened by the conversion instruction or by integer ops; four bytes per load."""
    w, scale, x, want = _gemv_problem(n, k)
    nbytes = w.numel() + scale.numel() * 4 + x.numel() * 2 + n * 2
    w16 = (w.float() * scale[:, None]).to(torch.bfloat16)
    emit("gemv", "bf16 F.linear", {}, bench_us(lambda: torch.nn.functional.linear(x, w16)),
         nbytes + w.numel(), True)
    w32 = w.view(torch.int32)
    for block_n, block_k, warps, stages in itertools.product((4, 8, 16, 32), (256, 512, 1024, 2048), (4, 8),
                                                            (2, 3, 4)):
        if block_n * block_k > 16384 or block_n * block_k < 2048:
            continue
        config = {"BLOCK_N": block_n, "BLOCK_K": block_k, "num_warps": warps, "num_stages": stages}
        grid = (triton.cdiv(n, block_n),)
        for variant, magic in (("cvt", False), ("magic", True), ("packed", None)):
            y = torch.empty(1, n, device="cuda", dtype=torch.bfloat16)
            if magic is None:
                if block_k < 1024:
                    continue

                def run(y=y, block_n=block_n, block_k=block_k, warps=warps, stages=stages, grid=grid):
                    gemv_packed_kernel[grid](x, w32, scale, y, n, k // 4, w32.stride(0), BLOCK_N=block_n,
                                             BLOCK_K4=block_k // 4, num_warps=warps, num_stages=stages)
            else:
                def run(y=y, magic=magic, block_n=block_n, block_k=block_k, warps=warps, stages=stages,
                        grid=grid):
                    gemv_bytes_kernel[grid](x, w, scale, y, n, k, w.stride(0), BLOCK_N=block_n, BLOCK_K=block_k,
                                            MAGIC=magic, num_warps=warps, num_stages=stages)
            _trial(variant, config, run, y, want, nbytes)


def sweep_gemv_interleaved(n: int = 16384, k: int = 16384) -> None:
    """The reference kernel itself (its weights interleaved by pack_for_gemv), config by config."""
    w, scale, x, want = _gemv_problem(n, k)
    w4 = pack_for_gemv(w)
    k4 = w4.shape[1]
    kernel = int8_gemv_kernel.fn  # under the autotuner: launched with each config in turn
    for block_n, block_k4, warps in itertools.product((2, 4, 8, 16), (128, 256, 512, 1024), (2, 4, 8)):
        if not 512 <= block_n * block_k4 <= 8192:
            continue
        config = {"BLOCK_N": block_n, "BLOCK_K4": block_k4, "num_warps": warps, "num_stages": 2}
        y = torch.empty(1, n, device="cuda", dtype=torch.bfloat16)
        nbytes = _gemv_cost(None, None, {"N": n, "K": k, "x": x, "w4": w4, "scale": scale, "y": y})["bytes"]

        def run(y=y, block_n=block_n, block_k4=block_k4, warps=warps):
            kernel[(triton.cdiv(n, block_n),)](x, w4, scale, y, n, k, k4, w4.stride(0), BLOCK_N=block_n,
                                               BLOCK_K4=block_k4, num_warps=warps, num_stages=2)
        _trial("interleaved", config, run, y, want, nbytes)


def _torch_copy(n: int, label: str) -> None:
    src = torch.randn(n, device="cuda")
    dst = torch.empty_like(src)
    emit("copy", label, {}, bench_us(lambda: dst.copy_(src)), 2 * src.numel() * 4, True)


def sweep_copy(n: int = 512 * 1024 * 1024) -> None:
    """2 GiB fp32 buffers (the size `ceilings --measure` copies); torch's copy_ at 256 MiB too."""
    dev = "cuda"
    _torch_copy(64 * 1024 * 1024, "torch copy_ 256 MiB")
    src = torch.randn(n, device=dev)
    dst = torch.empty_like(src)
    nbytes = 2 * src.numel() * src.element_size()
    emit("copy", "torch copy_", {}, bench_us(lambda: dst.copy_(src)), nbytes, True)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for block, warps, hints in itertools.product((2048, 4096, 8192, 16384), (4, 8), (False, True)):
        config = {"BLOCK": block, "num_warps": warps, "hints": hints}
        dst.zero_()
        run = lambda block=block, warps=warps, hints=hints: copy_kernel[(triton.cdiv(n, block),)](  # noqa: E731
            src, dst, n, BLOCK=block, HINTS=hints, num_warps=warps)
        run()
        emit("copy", "grid", config, bench_us(run), nbytes, bool(torch.equal(dst, src)))
    for block, warps, hints, per_sm in itertools.product((4096, 8192), (4, 8), (False, True), (4, 8)):
        config = {"BLOCK": block, "num_warps": warps, "hints": hints, "programs": per_sm * sms}
        dst.zero_()
        run = lambda block=block, warps=warps, hints=hints, per_sm=per_sm: copy_persistent_kernel[  # noqa: E731
            (per_sm * sms,)](src, dst, n, BLOCK=block, HINTS=hints, num_warps=warps)
        run()
        emit("copy", "persistent", config, bench_us(run), nbytes, bool(torch.equal(dst, src)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("gemv", "gemv-interleaved", "copy"),
                        help="default: gemv-interleaved and copy (gemv: the conversion variants)")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("kernel_sweep needs a CUDA GPU.", file=sys.stderr)
        return 2
    print(json.dumps({"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
                      "triton": triton.__version__}), flush=True)
    if args.only == "gemv":
        sweep_gemv()
    if args.only in (None, "gemv-interleaved"):
        sweep_gemv_interleaved()
    if args.only in (None, "copy"):
        sweep_copy()
    return 0


if __name__ == "__main__":
    sys.exit(main())
