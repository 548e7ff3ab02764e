"""An int8 matmul (torch._int_mm) on a Hopper GPU, where PyTorch has no sm_90 int8 kernel and
runs an Ampere-era one: the gemm.legacy-kernel finding and its fix, the fp8 tensor-core path
(torch._scaled_mm with float8_e4m3fn operands).

python examples/int8_matmul.py            # before: torch._int_mm, int8 x int8 -> int32
python examples/int8_matmul.py --fixed    # after: torch._scaled_mm, fp8 e4m3 x fp8 e4m3 -> bf16
python examples/int8_matmul.py --time     # print median ms per step
The fix changes the number format (8-bit float instead of 8-bit integer); quantise with a scale
per tensor (or per row) as torchao's Float8 configs do.
"""

from __future__ import annotations

import torch
from _bench import add_step_args, add_time_arg, example_parser, time_or_profile


def main() -> None:
    parser = example_parser(__doc__)
    parser.add_argument("--m", type=int, default=None, help="rows (default: 64 on CPU, 8192 on CUDA)")
    parser.add_argument("--k", type=int, default=None, help="default: 256 on CPU, 4096 on CUDA")
    parser.add_argument("--n", type=int, default=None, help="default: 256 on CPU, 4096 on CUDA")
    add_step_args(parser, fixed_help="apply the fix: fp8 torch._scaled_mm")
    add_time_arg(parser)
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    m = args.m or (8192 if device == "cuda" else 64)
    k = args.k or (4096 if device == "cuda" else 256)
    n = args.n or (4096 if device == "cuda" else 256)
    a = torch.randint(-64, 64, (m, k), device=device, dtype=torch.int8)
    w = torch.randint(-64, 64, (n, k), device=device, dtype=torch.int8)  # a Linear weight [N, K]
    a8 = (torch.randn(m, k, device=device) * 0.5).to(torch.float8_e4m3fn)
    w8 = (torch.randn(n, k, device=device) * 0.5).to(torch.float8_e4m3fn)
    scale = torch.ones((), device=device)

    @torch.inference_mode()
    def int8_step() -> torch.Tensor:
        return torch._int_mm(a, w.t())

    @torch.inference_mode()
    def fp8_step() -> torch.Tensor:
        return torch._scaled_mm(a8, w8.t(), scale_a=scale, scale_b=scale, out_dtype=torch.bfloat16)

    step = fp8_step if args.fixed else int8_step
    step()  # warm-up outside the counted region
    if time_or_profile("int8_matmul", step, args, device):
        return
    print(f"int8_matmul on {device}: [{m}, {k}] x [{k}, {n}], fixed={args.fixed} ({'fp8' if args.fixed else 'int8'})")


if __name__ == "__main__":
    main()
