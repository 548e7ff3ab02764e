"""Shared fixtures data for the counters tests: the recorded H200 pair (ncu CSV and the
torch.profiler trace of the same command, `examples/mlp.py --batch 256 --width 1024 --steps 1`)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from rooflinectl.capture.read.trace import from_chrome_trace
from rooflinectl.capture.run.session import Capture
from rooflinectl.ceilings.model import Ceilings, Roof
from rooflinectl.pipeline import build_profile

DATA = Path(__file__).parent / "data" / "h200_real"
NCU_CSV = DATA / "ncu_mlp.csv.gz"
TRACE = DATA / "mlp_small.trace.json.gz"
MLP_ARGS = ("--batch", "256", "--width", "1024", "--steps", "1")
# ncu ran without a filter: 76 launches, of which the last 43 are the rooflinectl.region("step")
# iteration (the first 33: two randn fills and the warm-up step, outside the region). The trace
# holds the whole script: 76 kernel launches (and memcpy/memset, which ncu does not replay).
NCU_ROWS = 76
REGION_LAUNCHES = 43
H200 = Ceilings(
    device_name="NVIDIA H200", device_kind="cuda",
    memory_bytes_per_s={"dram": Roof(4.8e12, "spec"), "l2": Roof(10e12, "measured")},
    compute_flops_per_s={"tensor.bf16": Roof(989e12, "spec"), "simt.fp32": Roof(67e12, "spec"),
                         "simt.fp64": Roof(34e12, "spec")},
    kernel_floor_s=Roof(2e-6, "estimate"),
)


def ncu_text() -> str:
    with gzip.open(NCU_CSV, "rt") as handle:
        return handle.read()


def recorded_profile(steps_marked: bool = False):
    """(capture, analytic profile, attributed launches) of the recorded trace, against H200 roofs.

    steps_marked: the same run as a script without region would show it with its own profiler's
    steps: the region becomes ProfilerStep#1 and the warm-up step (from the first aten::linear to
    the region) ProfilerStep#0, so the whole script is attributed and the steady state (step 1,
    the region's launches) is split from setup (weight upload, randn fills, warm-up step)."""
    with gzip.open(TRACE) as handle:
        raw = json.load(handle)
    if steps_marked:
        raw = _steps_marked(raw)
    trace = from_chrome_trace(raw)
    capture = Capture("cuda", trace, {"allow_tf32_matmul": False, "allow_tf32_cudnn": True,
                                      "device_name": "NVIDIA H200"})
    data, launches = build_profile(capture, command=["test"], completed=True, exit_code=0, ceilings=H200)
    return capture, data, launches


def _steps_marked(raw: dict) -> dict:
    events = raw["traceEvents"]
    region = next(e for e in events if e.get("name") == "rooflinectl.region:step")
    warmup_ts = min(e["ts"] for e in events if e.get("name") == "aten::linear" and e.get("cat") == "cpu_op")
    step0 = {**region, "name": "ProfilerStep#0", "ts": warmup_ts, "dur": region["ts"] - warmup_ts - 1,
             "args": {**region["args"], "External id": -1}}
    step1 = {**region, "name": "ProfilerStep#1"}
    return {**raw, "traceEvents": [e for e in events if e is not region] + [step0, step1]}
