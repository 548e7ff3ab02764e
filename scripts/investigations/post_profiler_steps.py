"""Where the cost left after a profiler stops comes from, on a launch-bound step: eager ResNet-50
training steps timed with CUDA events before any profiler, then profiled for 3 steps (a bare
torch.profiler, or rooflinectl's session with --profile-steps 3), then after the stop.

Also one tiny launch's host cost before and after (after the session for `ours`): a slower
launch afterwards means CUPTI stayed attached.

Usage: python3 scripts/investigations/post_profiler_steps.py bare|ours [--batch 64] [--steps 10]. Prints one JSON line (ms)."""

from __future__ import annotations

import argparse
import json
import os
import statistics

import torch
import torchvision
from post_profiler_overhead import per_launch_us  # scripts/ is on the path of a script run from it


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["bare", "ours", "ours-noscopes"])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=10, help="steps timed before and after")
    args = parser.parse_args()
    model = torchvision.models.resnet50().cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(args.batch, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (args.batch,), device="cuda")

    def step() -> None:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    def timed(n: int) -> list[float]:
        events = [torch.cuda.Event(enable_timing=True) for _ in range(n + 1)]
        events[0].record()
        for i in range(n):
            step()
            events[i + 1].record()
        torch.cuda.synchronize()
        return [a.elapsed_time(b) for a, b in zip(events, events[1:])]

    tiny = torch.zeros(1, device="cuda")

    def tiny_launch_us() -> float:
        return round(per_launch_us(tiny, 2000), 2)

    for _ in range(3):
        step()
    tiny_before = min(tiny_launch_us() for _ in range(3))
    before = timed(args.steps)
    if args.mode == "bare":
        prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                  torch.profiler.ProfilerActivity.CUDA], record_shapes=True)
        prof.start()
        timed(3)
        torch.cuda.synchronize()
        prof.stop()
        after = timed(args.steps)
    else:
        if args.mode == "ours-noscopes":
            import rooflinectl.capture.run.session as session

            session.module_scopes = lambda *a, **k: __import__("contextlib").nullcontext(lambda: None)
        from rooflinectl.capture.run.session import profiling

        with profiling("cuda", profile_steps=3):
            timed(3)
            after = timed(args.steps)
    tiny_after = min(tiny_launch_us() for _ in range(3))  # after the session (ours) or the stop (bare)
    print(json.dumps({"mode": args.mode, "TEARDOWN_CUPTI": os.environ.get("TEARDOWN_CUPTI"),
                      "tiny_launch_before_us": tiny_before, "tiny_launch_after_us": tiny_after,
                      "before_ms": round(statistics.median(before), 2), "after_ms": round(statistics.median(after), 2),
                      "after_first10_ms": round(statistics.median(after[:10]), 2),
                      "after_rest_ms": round(statistics.median(after[10:] or after), 2),
                      "after_each": [round(t, 1) for t in after]}), flush=True)


if __name__ == "__main__":
    main()
