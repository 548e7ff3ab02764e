"""N tiny launches: one-element in-place adds, one recorded op and one kernel each.

python scripts/scale_workload.py 200000            # on the GPU when there is one, else on the CPU
python scripts/scale_workload.py 200000 --bare-profile trace.json   # under a bare torch.profiler

The workload of scripts/bench_scale.py: a long run of the shortest launches, where what the
profiler and the tool do per event is all there is to measure. With --bare-profile, the same
loop runs under torch.profiler (CPU + CUDA activities, record_shapes) and the trace is exported
with its own exporter: the baseline that `rooflinectl profile` is compared with. It prints one
JSON line with the seconds of each phase.
"""

from __future__ import annotations

import argparse
import json
import time

import torch


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("launches", type=int)
    parser.add_argument("--bare-profile", metavar="TRACE", help="run under torch.profiler and export here")
    args = parser.parse_args()
    imported_at = time.time()  # python and torch imported (the parent knows when it started us)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    before_s = time.perf_counter()
    t = torch.zeros(1, device=device)
    device_s = time.perf_counter() - before_s  # the CUDA context on a GPU
    prof = None
    start_s = 0.0
    if args.bare_profile:
        activities = [torch.profiler.ProfilerActivity.CPU]
        if device == "cuda":
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        before_s = time.perf_counter()
        prof = torch.profiler.profile(activities=activities, record_shapes=True)
        prof.start()
        start_s = time.perf_counter() - before_s
    start = time.perf_counter()
    for _ in range(args.launches):
        t.add_(1)
    if device == "cuda":
        torch.cuda.synchronize()
    ran = time.perf_counter()
    phases = {"device": device, "launches": args.launches, "run_s": ran - start, "imported_at": imported_at,
              "device_init_s": device_s, "profiler_start_s": start_s}
    if prof is not None:
        prof.stop()
        stopped = time.perf_counter()
        prof.export_chrome_trace(args.bare_profile)
        phases.update(stop_s=stopped - ran, export_s=time.perf_counter() - stopped)
    assert float(t.item()) == float(args.launches)  # the work ran
    phases["end_at"] = time.time()  # what follows until the parent sees the exit is the exit
    print("SCALE " + json.dumps(phases), flush=True)


if __name__ == "__main__":
    main()
