"""An fp32 MLP whose matmuls run on CUDA cores: the precision.fp32-matmul finding and its fix.

python examples/fp32_mlp.py                    # before: fp32 matmuls (PyTorch's default)
python examples/fp32_mlp.py --fixed            # after: TF32 tensor cores
python examples/fp32_mlp.py --fixed --fix bf16 # after: bf16 autocast
python examples/fp32_mlp.py --time             # print median ms per step (CUDA events on a GPU)
rooflinectl profile examples/fp32_mlp.py -o before.json -- --steps 5 && rooflinectl advise before.json
"""

from __future__ import annotations

import contextlib

import torch
from _bench import add_step_args, add_time_arg, example_parser, time_or_profile


def main() -> None:
    parser = example_parser(__doc__)
    parser.add_argument("--batch", type=int, default=None, help="rows (default: 64 on CPU, 8192 on CUDA)")
    parser.add_argument("--width", type=int, default=None, help="hidden width (default: 256 on CPU, 4096 on CUDA)")
    parser.add_argument("--depth", type=int, default=2)
    add_step_args(parser, fixed_help="apply the fix")
    parser.add_argument("--fix", choices=["tf32", "bf16"], default="tf32", help="which fix --fixed applies")
    add_time_arg(parser)
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
    if time_or_profile("fp32_mlp", step, args, device, min_timed_steps=10):
        return
    print(f"fp32_mlp on {device}: batch {batch}, width {width}, fixed={args.fixed} ({args.fix})")


if __name__ == "__main__":
    main()
