"""A tiny model applied step after step to a tiny batch: launch overhead dominates.

python examples/tiny_batch_loop.py            # before: hundreds of ~µs kernels, the GPU mostly idle
python examples/tiny_batch_loop.py --fixed    # after: the loop captured once in a CUDA graph, replayed
python examples/tiny_batch_loop.py --time     # print median ms per step
On CPU there are no CUDA graphs: --fixed says so and runs the same eager loop.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from _bench import add_step_args, add_time_arg, example_parser, time_or_profile


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
    parser = example_parser(__doc__)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--inner", type=int, default=None, help="model applications per step (default 8 CPU, 50 CUDA)")
    add_step_args(parser, fixed_help="apply the fix: a CUDA graph")
    add_time_arg(parser)
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
    if time_or_profile("tiny_batch_loop", step, args, device):
        return
    if device == "cuda":
        torch.cuda.synchronize()
    print(f"tiny_batch_loop on {device}: batch {args.batch}, {inner} x {args.depth} layers, fixed={args.fixed}")


if __name__ == "__main__":
    main()
