"""An fp32 MLP whose matmuls run on CUDA cores: the precision.fp32-matmul finding and its fix.

python examples/fp32_mlp.py                    # before: fp32 matmuls (PyTorch's default)
python examples/fp32_mlp.py --fixed            # after: TF32 tensor cores
python examples/fp32_mlp.py --fixed --fix bf16 # after: bf16 autocast
python examples/fp32_mlp.py --time             # print median ms per step (CUDA events on a GPU)
rooflinectl profile examples/fp32_mlp.py -o before.json -- --steps 5 && rooflinectl advise before.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import time
from collections.abc import Callable

import torch

import rooflinectl


def time_steps_ms(step: Callable[[], object], steps: int, device: str) -> float:
    """Median milliseconds per step: CUDA events on a GPU (idle gaps included), perf_counter on CPU."""
    times = []
    for _ in range(steps):
        if device == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            step()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        else:
            t0 = time.perf_counter()
            step()
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=None, help="rows (default: 64 on CPU, 8192 on CUDA)")
    parser.add_argument("--width", type=int, default=None, help="hidden width (default: 256 on CPU, 4096 on CUDA)")
    parser.add_argument("--depth", type=int, default=2)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--fixed", action="store_true", help="apply the fix")
    parser.add_argument("--fix", choices=["tf32", "bf16"], default="tf32", help="which fix --fixed applies")
    parser.add_argument("--time", action="store_true", help="time steps instead of profiling a region")
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    batch = args.batch or (8192 if device == "cuda" else 64)
    width = args.width or (4096 if device == "cuda" else 256)
    layers: list[torch.nn.Module] = []
    for _ in range(args.depth):
        layers += [torch.nn.Linear(width, 4 * width), torch.nn.GELU(), torch.nn.Linear(4 * width, width)]
    model = torch.nn.Sequential(*layers).to(device)
    x = torch.randn(batch, width, device=device)
    if args.fixed and args.fix == "tf32":
        torch.set_float32_matmul_precision("high")  # the fix: fp32 matmuls on TF32 tensor cores
    use_bf16 = args.fixed and args.fix == "bf16"

    @torch.inference_mode()
    def step() -> torch.Tensor:
        ctx = torch.autocast(device, dtype=torch.bfloat16) if use_bf16 else contextlib.nullcontext()
        with ctx:
            return model(x)

    step()  # warm-up: algorithm choice and allocation stay outside the counted region
    if args.time:
        ms = time_steps_ms(step, max(args.steps, 10), device)
        print("TIMING " + json.dumps({"example": "fp32_mlp", "fixed": args.fixed, "device": device, "step_ms": ms}))
        return
    for _ in range(args.steps):
        with rooflinectl.region("step"):
            step()
    print(f"fp32_mlp on {device}: batch {batch}, width {width}, fixed={args.fixed} ({args.fix})")


if __name__ == "__main__":
    main()
