"""Shared fixtures data for the counters tests: the recorded H200 pair (ncu CSV and the
torch.profiler trace of the same command, `examples/mlp.py --batch 256 --width 1024 --steps 1`)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from rooflinectl.capture.session import Capture
from rooflinectl.capture.trace import from_chrome_trace
from rooflinectl.ceilings.model import Ceilings, Roof
from rooflinectl.pipeline import build_profile

DATA = Path(__file__).parent / "data" / "h200_real"
NCU_CSV = DATA / "ncu_mlp.csv.gz"
TRACE = DATA / "mlp_small.trace.json.gz"
MLP_ARGS = ("--batch", "256", "--width", "1024", "--steps", "1")
# ncu ran without a filter: 76 launches, of which the last 43 are the rooflinectl.region("step")
# iteration (the first 33: two randn fills and the warm-up step, outside the region).
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


def recorded_profile():
    """(capture, analytic profile, counted launches) of the recorded trace, against H200 roofs."""
    with gzip.open(TRACE) as handle:
        trace = from_chrome_trace(json.load(handle))
    capture = Capture("cuda", trace, {"allow_tf32_matmul": False, "allow_tf32_cudnn": True,
                                      "device_name": "NVIDIA H200"})
    data, launches = build_profile(capture, command=["test"], completed=True, exit_code=0, ceilings=H200)
    return capture, data, launches
