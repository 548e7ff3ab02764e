"""A custom Triton row kernel compiled with a BLOCK_SIZE made for much wider rows than it is given:
the kernel.low-occupancy finding and its fix.

The kernel scales each row of a [rows, 256] fp32 tensor to unit root-mean-square, one program
per row. Its BLOCK_SIZE of 16384 (written for rows of up to 16384 columns) on 4 warps puts 128
elements in every thread's registers, masked or not: 168 registers per thread (Triton 3.6's own
ptxas, compiling for sm_90; the example prints what its compile gave), so an H200 SM holds 3 of
its 4-warp blocks, 12 of 64 warps (18.75%, limited by registers). Three 1 KB rows in flight per
SM are far too few bytes to cover DRAM latency. The fix is the one the finding names: a
BLOCK_SIZE that fits the rows (next_power_of_2(256) = 256): 16 registers, 16 blocks (all 64
warps) per SM. The masked-off lanes also cost instructions, which the fix saves too: the rule's
estimate counts the occupancy only.

python examples/wide_block.py            # before: BLOCK_SIZE 16384, num_warps 4
python examples/wide_block.py --fixed    # after: BLOCK_SIZE 256, num_warps 4
python examples/wide_block.py --time     # print median ms per step (CUDA events)
rooflinectl profile examples/wide_block.py -o before.json -- --steps 5 && rooflinectl advise before.json
Needs a CUDA GPU (the kernel is Triton's).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from _bench import add_step_args, add_time_arg, example_parser, time_or_profile

from rooflinectl.analysis.occupancy import occupancy
from rooflinectl.ceilings.sm_limits import sm_limits

WIDE_BLOCK = 16384  # the before: sized for the widest rows the kernel was written for
WARPS = 4


def _rms_cost(grid, metadata, args):
    elements = grid[0] * args["n_cols"]  # rows x columns, whatever BLOCK is
    return {"name": "rms_rows", "flops32": 3.0 * elements,  # x * x and its sum, then x * scale
            "bytes": 8.0 * elements, "family": "norm"}  # fp32 read once, written once


@triton.jit(launch_metadata=_rms_cost)
def rms_rows(x, y, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    v = tl.load(x + row * n_cols + cols, mask=mask, other=0.0)
    scale = tl.rsqrt(tl.sum(v * v, axis=0) / n_cols + eps)
    tl.store(y + row * n_cols + cols, v * scale, mask=mask)


def main() -> None:
    parser = example_parser(__doc__)
    parser.add_argument("--rows", type=int, default=131072, help="rows (programs) per launch")
    parser.add_argument("--cols", type=int, default=256)
    add_step_args(parser, fixed_help="apply the fix: BLOCK_SIZE = next_power_of_2(cols)")
    add_time_arg(parser)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("wide_block needs a CUDA GPU: its kernel is a Triton kernel.")
    block = triton.next_power_of_2(args.cols) if args.fixed else max(WIDE_BLOCK, triton.next_power_of_2(args.cols))
    x = torch.randn(args.rows, args.cols, device="cuda")
    y = torch.empty_like(x)

    def step():
        return rms_rows[(args.rows,)](x, y, args.cols, 1e-6, BLOCK=block, num_warps=WARPS)

    compiled = step()  # warm-up (compilation) outside the counted region; a launch returns the compiled kernel
    torch.testing.assert_close(y, x * torch.rsqrt(x.pow(2).mean(dim=1, keepdim=True) + 1e-6))
    if time_or_profile("wide_block", step, args, "cuda"):
        return
    limits = sm_limits(torch.cuda.get_device_capability(0))
    occ = occupancy(limits, WARPS * 32, compiled.n_regs, compiled.metadata.shared) if limits else None
    held = f"{occ.blocks_per_sm} blocks, {occ.occupancy:.1%} occupancy ({occ.limiter})" if occ else "unknown occupancy"
    print(f"wide_block: {args.rows} rows of {args.cols} fp32, BLOCK_SIZE {block}, {WARPS} warps: "
          f"{compiled.n_regs} registers per thread, {compiled.metadata.shared} B shared memory; {held} per SM; "
          f"fixed={args.fixed}")


if __name__ == "__main__":
    main()
