"""A mostly idle GPU: short bursts of kernels between host-side pauses (data loading, logging).

python examples/idle_heavy.py --seconds 5   # 10 bursts a second, each a few ms of work
The GPU idles most of the time, so NVML sees its clock drop between bursts: the profile's
clocks say what the kernels got. A plain script (no rooflinectl import); runs on CPU too.
"""

from __future__ import annotations

import argparse
import time

import torch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--pause", type=float, default=0.1, help="host pause between bursts, seconds")
    args = parser.parse_args()
    cuda = torch.cuda.is_available()
    device, dtype = ("cuda", torch.bfloat16) if cuda else ("cpu", torch.float32)
    n = 4096 if cuda else 256
    x = torch.randn(n, n, device=device, dtype=dtype)
    w = torch.randn(n, n, device=device, dtype=dtype) / n**0.5  # keeps the values finite
    start = time.perf_counter()
    bursts = 0
    while time.perf_counter() - start < args.seconds:
        y = x
        for _ in range(8):
            y = torch.relu(y @ w)
        if cuda:
            torch.cuda.synchronize()
        bursts += 1
        time.sleep(args.pause)
    print(f"idle_heavy: {bursts} bursts in {time.perf_counter() - start:.1f} s on {device}")


if __name__ == "__main__":
    main()
