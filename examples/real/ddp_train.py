"""Data-parallel training under torchrun: DistributedDataParallel over NCCL (GPUs) or gloo (CPU).

torchrun --nproc-per-node 2 examples/real/ddp_train.py --model gpt2 --layers 12
torchrun --nproc-per-node 2 examples/real/ddp_train.py --model mlp --device cpu     # gloo, for tests
Each rank prints one TIMING line (per-iteration times) tagged with its rank.
"""

from __future__ import annotations

import json
import os

import torch
import torch.distributed as dist
from _common import parser, pick_device, run_loop


def build(kind: str, layers: int, device: str) -> tuple[torch.nn.Module, torch.Tensor, int]:
    if kind == "gpt2":
        from transformers import GPT2Config, GPT2LMHeadModel

        config = GPT2Config(n_layer=layers)
        return GPT2LMHeadModel(config).to(device), torch.tensor(0), config.vocab_size
    width = 256
    mods: list[torch.nn.Module] = []
    for _ in range(layers):
        mods += [torch.nn.Linear(width, 4 * width), torch.nn.GELU(), torch.nn.Linear(4 * width, width)]
    return torch.nn.Sequential(*mods).to(device), torch.tensor(0), width


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--model", choices=["gpt2", "mlp"], default="gpt2")
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--bucket-mb", type=float, default=25.0, help="DDP bucket_cap_mb")
    args = p.parse_args()
    device = pick_device(args.device)
    rank = int(os.environ.get("RANK", 0))
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    if device == "cuda":
        torch.cuda.set_device(local_rank)
        device = f"cuda:{local_rank}"
    dist.init_process_group("nccl" if device.startswith("cuda") else "gloo")
    torch.manual_seed(0)
    model, _, size = build(args.model, args.layers, device)
    ddp = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=args.bucket_mb)
    optimizer = torch.optim.AdamW(ddp.parameters(), lr=1e-4)
    torch.manual_seed(rank)
    if args.model == "gpt2":
        ids = torch.randint(0, size, (args.batch, args.seq), device=device)

        def loss_fn() -> torch.Tensor:
            with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=device.startswith("cuda")):
                return ddp(ids, labels=ids).loss
    else:
        x = torch.randn(args.batch, size, device=device)

        def loss_fn() -> torch.Tensor:
            return ddp(x).square().mean()

    def step() -> torch.Tensor:
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn()
        loss.backward()
        optimizer.step()
        return loss

    kind = "cuda" if device.startswith("cuda") else "cpu"
    out = run_loop("ddp_train", step, args.warmup, args.steps, kind,
                   {"rank": rank, "world_size": dist.get_world_size(), "bucket_mb": args.bucket_mb,
                    "model": args.model, "layers": args.layers})
    print("OUTPUT " + json.dumps({"rank": rank, "loss": float(out.detach())}))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
