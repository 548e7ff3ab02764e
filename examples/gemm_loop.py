"""A long bf16 GEMM loop: long enough for the GPU to reach its power limit if it will.

python examples/gemm_loop.py --seconds 30          # 16384^3 bf16 matmuls back to back for 30 s
rooflinectl profile examples/gemm_loop.py -- --seconds 30   # the profile's clocks show what NVML saw
A plain script (no rooflinectl import). On CPU it runs small fp32 matmuls for the same time.
"""

from __future__ import annotations

import argparse
import time

import torch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=30.0, help="how long to keep the GPU busy")
    parser.add_argument("--size", type=int, default=None, help="matrix size (default 16384 on CUDA, 512 on CPU)")
    args = parser.parse_args()
    cuda = torch.cuda.is_available()
    device, dtype = ("cuda", torch.bfloat16) if cuda else ("cpu", torch.float32)
    n = args.size or (16384 if cuda else 512)
    torch.manual_seed(0)
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    c = torch.empty(n, n, device=device, dtype=dtype)
    start = time.perf_counter()
    calls = 0
    while time.perf_counter() - start < args.seconds:
        for _ in range(20):
            torch.matmul(a, b, out=c)
        calls += 20
        if cuda:
            torch.cuda.synchronize()  # keep the queue short, so the loop stops on time
    elapsed = time.perf_counter() - start
    tflops = 2 * n**3 * calls / elapsed / 1e12
    print(f"gemm_loop: {calls} matmuls of {n}^3 {str(dtype).replace('torch.', '')} in {elapsed:.1f} s, "
          f"{tflops:.0f} TFLOP/s on {device}")


if __name__ == "__main__":
    main()
