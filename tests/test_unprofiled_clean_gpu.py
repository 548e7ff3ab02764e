"""On a GPU (Python 3.12 there: module scopes through sys.monitoring), after the default sampling
stops, nothing of ours but the marker stays: the script of tests/test_unprofiled_clean.py with its
model on CUDA reads the registries during a profiled and an un-profiled step, plus the NVML
sampler's thread, which runs only on a GPU, and a tiny launch's host cost (CUPTI left attached
makes it grow: scripts/investigations/post_profiler_overhead.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_unprofiled_clean import SCRIPT

pytestmark = pytest.mark.gpu

TINY = """
import time
def tiny_launch_us(n=3000):
    x = torch.zeros(1, device="cuda")
    best = float("inf")
    for _ in range(3):
        torch.cuda.synchronize()
        began = time.perf_counter()
        for _ in range(n):
            x.add_(1)
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - began) / n * 1e6)
    return best
"""


def test_after_the_stop_on_a_gpu_only_the_marker_stays(tmp_path: Path) -> None:
    source = (SCRIPT.replace("torch.nn.ReLU())", "torch.nn.ReLU()).cuda()")
              .replace("torch.randn(2, 8)", "torch.randn(2, 8, device='cuda')")
              .replace("model = torch.nn.Sequential", TINY + "\nmodel = torch.nn.Sequential")
              .replace('print("STATE", i, json.dumps(state(model)))',
                       'print("STATE", i, json.dumps({**state(model), "tiny_us": tiny_launch_us()}))'))
    assert source.count("cuda") >= 4 and "tiny_launch_us()" in source
    script = tmp_path / "script.py"
    script.write_text(source)
    done = subprocess.run([sys.executable, "-m", "rooflinectl", "profile", str(script), "-o", str(tmp_path / "p.json"),
                           "--device", "cuda", "-q"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    states = {int(line.split()[1]): json.loads(line.split(" ", 2)[2])
              for line in done.stdout.splitlines() if line.startswith("STATE ")}
    profiled, free = states[1], states[8]
    assert profiled["profiler_on"] is True and profiled["nvml_threads"] in (0, 1)  # 0: no pynvml there
    tiny_profiled_us, tiny_free_us = profiled.pop("tiny_us"), free.pop("tiny_us")
    assert free == {"profiler_on": False, "monitoring_events": 0 if profiled["monitoring_events"] else None,
                    "global_module_hooks": 0, "optimizer_hooks": 1, "model_pre_hooks": 0, "triton_hooks": 0,
                    "nvml_threads": 0, "torch_function_modes": 0, "import_finders": 0}, free
    # a launch recorded by the profiler costs several times one that is not; after the stop with
    # CUPTI detached it is back near a plain launch (6-9 us on the H200 machine's host)
    assert tiny_free_us < 0.8 * tiny_profiled_us, (tiny_free_us, tiny_profiled_us)
