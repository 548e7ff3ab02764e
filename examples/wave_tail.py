"""A custom Triton kernel whose grid leaves its last wave nearly empty: the grid.wave-quantisation
finding and its fix.

Every program does the same long piece of work (chains of dependent FMAs, enough of them that one
program keeps an SM's FMA units busy), so a block takes the same time wherever it runs and the
kernel takes as long as its number of waves. The grid is 1 1/8 times the GPU's slots (SMs x the
blocks of this kernel one SM holds, from its registers and threads by the occupancy calculator
that rooflinectl uses): two waves, the second with an eighth of the slots busy.

python examples/wave_tail.py            # before: slots + slots/8 programs, one task each
python examples/wave_tail.py --fixed    # after: each task split in 32 programs: the last wave is short
python examples/wave_tail.py --time     # print median ms per step (CUDA events)
rooflinectl profile examples/wave_tail.py -o before.json -- --steps 5 && rooflinectl advise before.json
Needs a CUDA GPU (the kernel is Triton's).
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl
from _bench import add_step_args, add_time_arg, example_parser, time_or_profile

from rooflinectl.analysis.occupancy import occupancy
from rooflinectl.ceilings.sm_limits import sm_limits

BLOCK = 8192  # elements per program: 8 per thread at 32 warps, four FMA chains each
WARPS = 32
SPLIT = 32  # the fix: each task as this many programs with 1/SPLIT of its iterations
CHAINS = 4


def _spin_cost(grid, metadata, args):
    programs = grid[0]
    return {"name": "spin_kernel", "flops32": 2.0 * CHAINS * args["iters"] * BLOCK * programs,
            "bytes": 4.0 * BLOCK * programs, "family": "other"}


@triton.jit(launch_metadata=_spin_cost)
def spin_kernel(out, iters, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    lanes = tl.arange(0, BLOCK)
    a = (lanes + pid).to(tl.float32) * 1e-7
    b, c, d = a * 0.5, a * 0.25, a * 0.125
    for _ in range(iters):  # four independent chains (CHAINS): each step depends on the last
        a = a * 0.9999 + 1e-6
        b = b * 0.9999 + 1e-6
        c = c * 0.9999 + 1e-6
        d = d * 0.9999 + 1e-6
    tl.store(out + pid.to(tl.int64) * BLOCK + lanes, a + b + c + d)


def main() -> None:
    parser = example_parser(__doc__)
    parser.add_argument("--iters", type=int, default=2048, help="FMAs per chain in one task")
    add_step_args(parser, fixed_help=f"split every task into {SPLIT} programs")
    add_time_arg(parser)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("wave_tail needs a CUDA GPU: its kernel is a Triton kernel.")
    props = torch.cuda.get_device_properties(0)
    limits = sm_limits(torch.cuda.get_device_capability(0))
    probe = torch.empty(BLOCK, device="cuda")
    # the probe passes the real iteration count: Triton specialises an integer argument equal to
    # 1 (and one divisible by 16), and the iters=1 variant needed 32 registers where the launched
    # one needs 37 (H200, Triton 3.6): 2 blocks per SM where 1 fits, so the first recorded run
    # made 2 1/4 waves of 132 slots instead of 1 1/8
    compiled = spin_kernel[(1,)](probe, args.iters, BLOCK=BLOCK, num_warps=WARPS)
    occ = occupancy(limits, WARPS * 32, compiled.n_regs, compiled.metadata.shared) if limits else None
    resident = occ.blocks_per_sm if occ and occ.blocks_per_sm else 1
    slots = props.multi_processor_count * resident
    tasks = slots + slots // 8
    programs, iters = (tasks * SPLIT, math.ceil(args.iters / SPLIT)) if args.fixed else (tasks, args.iters)
    out = torch.empty(programs * BLOCK, device="cuda")

    def step() -> None:
        spin_kernel[(programs,)](out, iters, BLOCK=BLOCK, num_warps=WARPS)

    step()  # warm-up outside the counted region
    if time_or_profile("wave_tail", step, args, "cuda"):
        return
    print(f"wave_tail: {props.multi_processor_count} SMs x {resident} resident ({compiled.n_regs} registers per "
          f"thread, {WARPS * 32} threads): {slots} slots; {programs} programs of {iters} iterations, "
          f"fixed={args.fixed}")


if __name__ == "__main__":
    main()
