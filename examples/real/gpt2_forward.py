"""GPT-2 (transformers, random weights from a config) forward passes, as a plain user script:
build the model, copy it to the GPU, warm up (and compile), then run a timed loop. No region.

python examples/real/gpt2_forward.py --layers 12 --batch 8 --seq 1024            # GPT-2 small, bf16
python examples/real/gpt2_forward.py --compile default
rooflinectl profile examples/real/gpt2_forward.py -- --compile reduce-overhead
Needs `transformers`. Prints one TIMING line (per-iteration CUDA-event times) and an OUTPUT digest.
"""

from __future__ import annotations

import json
import sys

import torch
from _common import digest, maybe_compile, parser, pick_device, run_loop


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--dtype", choices=["bf16", "fp16", "fp32"], default="bf16")
    p.add_argument("--user-profiler", metavar="TRACE",
                   help="run the timed loop under the script's own torch.profiler with prof.step() per "
                        "iteration and export its Chrome trace to TRACE (what many training scripts do)")
    args = p.parse_args()
    try:
        from transformers import GPT2Config, GPT2LMHeadModel
    except ImportError as exc:
        sys.exit(f"gpt2_forward.py needs transformers (pip install transformers): {exc}")
    device = pick_device(args.device)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[args.dtype]
    torch.manual_seed(0)
    config = GPT2Config(n_layer=args.layers, n_positions=max(1024, args.seq))
    model = GPT2LMHeadModel(config).eval()  # built on the host, as from a checkpoint
    model = model.to(device=device, dtype=dtype)  # the weight upload every real script does
    ids = torch.randint(0, config.vocab_size, (args.batch, args.seq), device=device)

    def forward() -> torch.Tensor:
        with torch.no_grad():
            return model(ids).logits

    step = maybe_compile(forward, args.compile)
    extra = {"compile": args.compile, "layers": args.layers, "batch": args.batch, "seq": args.seq}
    if args.user_profiler:
        acts = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if device == "cuda" else [])
        for _ in range(args.warmup):
            step()
        with torch.profiler.profile(activities=acts, record_shapes=True,
                                    schedule=torch.profiler.schedule(wait=1, warmup=1, active=args.steps)) as prof:
            for _ in range(args.steps + 2):
                out = step()
                prof.step()
        prof.export_chrome_trace(args.user_profiler)
    else:
        out = run_loop("gpt2_forward", step, args.warmup, args.steps, device, extra)
    print("OUTPUT " + json.dumps(digest(out)))


if __name__ == "__main__":
    main()
