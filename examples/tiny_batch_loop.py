"""A tiny model applied step after step to a tiny batch: launch overhead dominates.

python examples/tiny_batch_loop.py            # before: hundreds of ~µs kernels, the GPU mostly idle
python examples/tiny_batch_loop.py --fixed    # after: the loop captured once in a CUDA graph, replayed
python examples/tiny_batch_loop.py --time     # print median ms per step
On CPU there are no CUDA graphs: --fixed says so and runs the same eager loop.
"""

from __future__ import annotations

import argparse
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


def graphed(run: Callable[[torch.Tensor], torch.Tensor], example: torch.Tensor) -> Callable[[], torch.Tensor]:
    """Capture run(static input) in a CUDA graph; the returned step replays it (torch.cuda.graphs)."""
    static_x = example.clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):  # warm-up on a side stream, as capture requires
            run(static_x)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = run(static_x)

    def step() -> torch.Tensor:
        graph.replay()
        return static_out

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--inner", type=int, default=None, help="model applications per step (default 8 CPU, 50 CUDA)")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--fixed", action="store_true", help="apply the fix: a CUDA graph")
    parser.add_argument("--time", action="store_true", help="time steps instead of profiling a region")
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    inner = args.inner or (50 if device == "cuda" else 8)
    layers: list[torch.nn.Module] = []
    for _ in range(args.depth):
        layers += [torch.nn.Linear(args.width, args.width), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers).to(device)
    x = torch.randn(args.batch, args.width, device=device)

    @torch.inference_mode()
    def run(inp: torch.Tensor) -> torch.Tensor:
        for _ in range(inner):
            inp = model(inp) * 0.5 + inp
        return inp

    if args.fixed and device == "cuda":
        with torch.inference_mode():
            step = graphed(run, x)
    else:
        if args.fixed:
            print("tiny_batch_loop: CUDA graphs need a GPU; on CPU the fix is a no-op")

        def step() -> torch.Tensor:
            return run(x)

    step()  # warm-up outside the counted region
    if args.time:
        ms = time_steps_ms(step, max(args.steps, 20), device)
        print("TIMING " + json.dumps({"example": "tiny_batch_loop", "fixed": args.fixed, "device": device,
                                      "step_ms": ms}))
        return
    for _ in range(args.steps):
        with rooflinectl.region("step"):
            step()
    if device == "cuda":
        torch.cuda.synchronize()
    print(f"tiny_batch_loop on {device}: batch {args.batch}, {inner} x {args.depth} layers, fixed={args.fixed}")


if __name__ == "__main__":
    main()
