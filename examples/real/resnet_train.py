"""ResNet training steps (torchvision, random weights), bf16 autocast, channels-last, SGD with
momentum: a plain user script with model set-up, warm-up and a timed loop. No region.

python examples/real/resnet_train.py --arch resnet50 --batch 64
rooflinectl profile examples/real/resnet_train.py -- --compile default
Needs `torchvision`. Prints one TIMING line and an OUTPUT digest (the last loss).
"""

from __future__ import annotations

import json
import sys

import torch
from _common import parser, pick_device, run_loop, training_step


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--arch", default="resnet50")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--no-autocast", action="store_true", help="fp32 throughout")
    args = p.parse_args()
    try:
        import torchvision
    except ImportError:
        sys.exit("resnet_train.py needs torchvision (pip install torchvision)")
    device = pick_device(args.device)
    torch.manual_seed(0)
    model = getattr(torchvision.models, args.arch)(weights=None).to(device).to(memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(args.batch, 3, args.size, args.size, device=device).to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (args.batch,), device=device)
    amp_dtype = torch.bfloat16

    def fwd_bwd() -> torch.Tensor:
        with torch.autocast(device_type=device, dtype=amp_dtype, enabled=not args.no_autocast):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        return loss

    step = training_step(fwd_bwd, optimizer, args.compile)

    out = run_loop("resnet_train", step, args.warmup, args.steps, device,
                   {"compile": args.compile, "arch": args.arch, "batch": args.batch})
    print("OUTPUT " + json.dumps({"loss": float(out.detach())}))


if __name__ == "__main__":
    main()
