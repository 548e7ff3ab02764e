"""Record a real workload's raw torch.profiler trace (Chrome JSON, gzipped) for test data.

python3 scripts/record_trace.py OUT.trace.json.gz [--inductor-costs] [--cuda-only | --no-shapes] -- SCRIPT [ARGS...]

Runs SCRIPT as `python SCRIPT ARGS` would, under a bare torch.profiler (CPU and CUDA activities,
record_shapes) from start to end, with nothing of rooflinectl in the way: the trace is what the
profiler itself gives, so CPU tests can feed it to any stage. `{RANK}` in OUT is replaced by the
RANK environment variable (torchrun). --inductor-costs sets TORCHINDUCTOR_BENCHMARK_KERNEL=1 so
Inductor's kernels carry kernel_num_gb/kernel_flop in their event args. --cuda-only records the
CUDA activity alone (no CPU ops) and --no-shapes leaves record_shapes off: lighter profilers, to
measure what each part of the profiler costs a launch-bound program. Also writes
OUT.meta.json: versions, device, math modes, and the wall seconds of run, stop and export.
"""

from __future__ import annotations

import gzip
import json
import os
import runpy
import shutil
import sys
import tempfile
import time


def main() -> int:
    argv = sys.argv[1:]
    if "--" not in argv or len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    split = argv.index("--")
    opts, script = argv[:split], argv[split + 1:]
    out = opts[0].replace("{RANK}", os.environ.get("RANK", "0"))
    if "--inductor-costs" in opts:
        os.environ["TORCHINDUCTOR_BENCHMARK_KERNEL"] = "1"
    import torch

    acts = [] if "--cuda-only" in opts else [torch.profiler.ProfilerActivity.CPU]
    if torch.cuda.is_available():
        acts.append(torch.profiler.ProfilerActivity.CUDA)
    shapes = "--no-shapes" not in opts and "--cuda-only" not in opts
    prof = torch.profiler.profile(activities=acts, record_shapes=shapes, acc_events=True)
    sys.argv = script[:]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script[0])))
    code = 0
    t0 = time.perf_counter()
    prof.start()
    try:
        runpy.run_path(script[0], run_name="__main__")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        t1 = time.perf_counter()
        prof.stop()
        t2 = time.perf_counter()
        fd, tmp = tempfile.mkstemp(suffix=".json")
        os.close(fd)
        prof.export_chrome_trace(tmp)
        t3 = time.perf_counter()
        with open(tmp, "rb") as src, gzip.open(out, "wb") as dst:
            shutil.copyfileobj(src, dst)
        os.unlink(tmp)
        meta = {
            "script": script, "exit_code": code, "torch": torch.__version__, "cuda": torch.version.cuda,
            "device_name": torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu",
            "allow_tf32_matmul": bool(torch.backends.cuda.matmul.allow_tf32),
            "allow_tf32_cudnn": bool(torch.backends.cudnn.allow_tf32),
            "inductor_costs": "--inductor-costs" in opts,
            "activities": [str(a).rsplit(".", 1)[-1] for a in acts], "record_shapes": shapes,
            "run_s": t1 - t0, "stop_s": t2 - t1, "export_s": t3 - t2,
            "rank": os.environ.get("RANK"), "world_size": os.environ.get("WORLD_SIZE"),
        }
        with open(out + ".meta.json", "w") as handle:
            json.dump(meta, handle, indent=1)
        print(f"RECORDED {out} run {t1 - t0:.1f}s stop {t2 - t1:.1f}s export {t3 - t2:.1f}s", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
