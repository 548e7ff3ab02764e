"""An unfused bias + GELU + residual chain: the fusion.memory-chain finding and its fix.

python examples/gelu_chain.py            # before: three memory-bound kernels per step
python examples/gelu_chain.py --fixed    # after: torch.compile fuses them into one kernel
python examples/gelu_chain.py --time     # print median ms per step
torch.compile needs a C++ compiler on CPU (and Triton on CUDA); without them --fixed says so and
runs the eager code.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable

import torch
from _bench import add_step_args, add_time_arg, device_and_dtype, example_parser, time_or_profile


def bias_gelu_residual(x: torch.Tensor, bias: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
    h = x + bias  # kernel 1: reads x, writes h
    h = torch.nn.functional.gelu(h)  # kernel 2: reads h, writes h'
    return h + residual  # kernel 3: reads h' and residual, writes out


def compiled_or_eager(fn: Callable[..., torch.Tensor], device: str) -> Callable[..., torch.Tensor]:
    """torch.compile(fn) when this machine can compile it, else fn with a message."""
    if device == "cpu" and not (shutil.which("g++") or shutil.which("clang++") or shutil.which("c++")):
        print("gelu_chain: no C++ compiler, torch.compile cannot build CPU kernels; running eager")
        return fn
    return torch.compile(fn)


def main() -> None:
    parser = example_parser(__doc__)
    parser.add_argument("--tokens", type=int, default=None, help="rows (default: 1024 on CPU, 16384 on CUDA)")
    parser.add_argument("--width", type=int, default=None, help="width (default: 256 on CPU, 4096 on CUDA)")
    add_step_args(parser, fixed_help="apply the fix: torch.compile")
    add_time_arg(parser)
    args = parser.parse_args()
    device, dtype = device_and_dtype()
    tokens = args.tokens or (16384 if device == "cuda" else 1024)
    width = args.width or (4096 if device == "cuda" else 256)
    x = torch.randn(tokens, width, device=device, dtype=dtype)
    residual = torch.randn_like(x)
    bias = torch.randn(width, device=device, dtype=dtype)
    fn = compiled_or_eager(bias_gelu_residual, device) if args.fixed else bias_gelu_residual
    try:
        fn(x, bias, residual)  # warm-up (and compilation) outside the counted region
    except Exception as exc:  # torch.compile's backend failures are many; the eager code still runs
        print(f"gelu_chain: torch.compile failed ({exc.__class__.__name__}); running eager")
        fn = bias_gelu_residual
        fn(x, bias, residual)
    if time_or_profile("gelu_chain", lambda: fn(x, bias, residual), args, device):
        return
    print(f"gelu_chain on {device}: {tokens} x {width} {dtype}, fixed={args.fixed}")


if __name__ == "__main__":
    main()
