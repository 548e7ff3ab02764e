"""What a stopped torch.profiler leaves behind on the host: the cost of one tiny CUDA launch
(x.add_(1), host-bound) before a profiler session, during it and after it stopped.

Usage: python3 scripts/investigations/post_profiler_overhead.py [cpu|cuda]   (one variant; the GPU piece runs each
in its own process, with and without TEARDOWN_CUPTI set). Prints one JSON line, microseconds per launch."""

from __future__ import annotations

import json
import os
import sys
import time

import torch


def per_launch_us(x: torch.Tensor, n: int = 3000) -> float:
    """Host microseconds per x.add_(1) launch over n of them: what CUPTI left attached costs shows here."""
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(n):
        x.add_(1)
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / n * 1e6


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "cuda"
    x = torch.zeros(1, device="cuda")
    for _ in range(3):
        per_launch_us(x)
    before = min(per_launch_us(x) for _ in range(5))
    activities = [torch.profiler.ProfilerActivity.CPU]
    if mode == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    prof = torch.profiler.profile(activities=activities, record_shapes=True)
    prof.start()
    during = min(per_launch_us(x) for _ in range(3))
    prof.stop()
    after = [per_launch_us(x) for _ in range(5)]
    time.sleep(2.0)
    later = min(per_launch_us(x) for _ in range(5))
    print(json.dumps({"mode": mode, "TEARDOWN_CUPTI": os.environ.get("TEARDOWN_CUPTI"), "before_us": round(before, 2),
                      "during_us": round(during, 2), "after_us": [round(a, 2) for a in after],
                      "after_2s_us": round(later, 2)}), flush=True)


if __name__ == "__main__":
    main()
