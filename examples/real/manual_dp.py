"""Data parallel by hand: each rank computes its gradients, then one all_reduce of all of them
(flattened) averages them before the optimizer step. gloo on CPU, NCCL on GPUs.

torchrun --nproc-per-node 2 examples/real/manual_dp.py --device cpu
The multi-rank CPU test runs this rather than DistributedDataParallel over gloo: with torch 2.13,
a gloo collective that DDP issues from inside backward can hang destroy_process_group when the
run is profiled (README, "Multi-GPU jobs"). Each rank prints one TIMING line tagged with its rank.
"""

from __future__ import annotations

import json
import os

import torch
import torch.distributed as dist
from _common import parser, pick_device, run_loop


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--width", type=int, default=256)
    p.add_argument("--layers", type=int, default=1)
    p.add_argument("--batch", type=int, default=8)
    args = p.parse_args()
    if args.compile != "none":  # the all_reduce sits between backward and step: no compiled step here
        p.error("--compile does not apply to manual_dp (its step all-reduces the gradients by hand)")
    device = pick_device(args.device)
    rank = int(os.environ.get("RANK", 0))
    if device == "cuda":
        device = f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}"
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if device.startswith("cuda") else "gloo")
    world = dist.get_world_size()
    torch.manual_seed(0)
    layers: list[torch.nn.Module] = []
    for _ in range(args.layers):
        layers += [torch.nn.Linear(args.width, 4 * args.width), torch.nn.GELU(), torch.nn.Linear(4 * args.width, args.width)]
    model = torch.nn.Sequential(*layers).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    torch.manual_seed(rank)
    x = torch.randn(args.batch, args.width, device=device)

    def step() -> torch.Tensor:
        optimizer.zero_grad(set_to_none=True)
        loss = model(x).square().mean()
        loss.backward()
        grads = [q.grad for q in model.parameters()]
        flat = torch.cat([g.flatten() for g in grads])
        dist.all_reduce(flat)
        torch._foreach_copy_(grads, [v.view_as(g) for v, g in zip(flat.div_(world).split([g.numel() for g in grads]), grads)])
        optimizer.step()
        return loss

    kind = "cuda" if device.startswith("cuda") else "cpu"
    out = run_loop("manual_dp", step, args.warmup, args.steps, kind,
                   {"rank": rank, "world_size": world, "width": args.width, "layers": args.layers})
    print("OUTPUT " + json.dumps({"rank": rank, "loss": float(out.detach())}))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
