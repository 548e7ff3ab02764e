"""Many small same-shape matmuls in a Python loop (one per head, chunk or ensemble member): the
gemm.batch-small finding and its fix, one batched matmul.

python examples/small_gemms.py            # before: --count matmuls of [M, K] x [K, N], launched back to back
python examples/small_gemms.py --fixed    # after: one torch.bmm over the stacked operands
python examples/small_gemms.py --time     # print median ms per step
"""

from __future__ import annotations

import torch
from _bench import add_step_args, add_time_arg, device_and_dtype, example_parser, time_or_profile


def main() -> None:
    parser = example_parser(__doc__)
    parser.add_argument("--count", type=int, default=64, help="independent matmuls per step")
    parser.add_argument("--m", type=int, default=256)
    parser.add_argument("--k", type=int, default=128)
    parser.add_argument("--n", type=int, default=128)
    add_step_args(parser, fixed_help="apply the fix: one torch.bmm")
    add_time_arg(parser)
    args = parser.parse_args()
    device, dtype = device_and_dtype()
    x = torch.randn(args.count, args.m, args.k, device=device, dtype=dtype)
    w = torch.randn(args.count, args.k, args.n, device=device, dtype=dtype) * args.k ** -0.5

    @torch.inference_mode()
    def loop() -> torch.Tensor:
        return torch.stack([x[i] @ w[i] for i in range(args.count)])  # count launches, then one stack

    @torch.inference_mode()
    def batched() -> torch.Tensor:
        return torch.bmm(x, w)

    step = batched if args.fixed else loop
    step()  # warm-up outside the counted region
    if time_or_profile("small_gemms", step, args, device):
        return
    print(f"small_gemms on {device}: {args.count} x [{args.m}, {args.k}] @ [{args.k}, {args.n}] {dtype}, "
          f"fixed={args.fixed}")


if __name__ == "__main__":
    main()
