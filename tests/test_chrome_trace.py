"""`--save-trace` writes torch.profiler's Chrome trace with our per-kernel numbers in each
kernel event's args (issue 16, newcomer list); `--save-capture` keeps the raw capture."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rooflinectl.attribution.join import attribute
from rooflinectl.capture.read.trace import from_chrome_trace
from rooflinectl.capture.run.session import load_capture
from rooflinectl.ceilings.model import Ceilings, Roof
from rooflinectl.cli.main import main
from rooflinectl.outputs.chrome_trace import annotate
from rooflinectl.outputs.profile_file import load_profile
from rooflinectl.pipeline import analyse_trace
from rooflinectl.profile_model import ProfileData

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
REAL = Path(__file__).parent / "data" / "h200_real"


def test_save_trace_on_cpu(tmp_path: Path) -> None:
    out, trace_path, capture_path = tmp_path / "p.json", tmp_path / "t.json.gz", tmp_path / "c.json.gz"
    result = CliRunner().invoke(main, ["profile", str(EXAMPLES / "mlp.py"), "-o", str(out), "-q", "--device", "cpu",
                                       "--save-trace", str(trace_path), "--save-capture", str(capture_path),
                                       "--", "--batch", "16", "--width", "64", "--steps", "2"])
    assert result.exit_code == 0, result.output
    data = load_profile(out)
    with gzip.open(trace_path) as handle:
        trace = json.load(handle)
    assert trace["rooflinectl"]["tool"] == "rooflinectl"
    annotated = [e for e in trace["traceEvents"] if "rooflinectl.flops" in e.get("args", {})]
    assert len(annotated) == trace["rooflinectl"]["annotated_events"] >= data.summary["launches"]
    # the events' FLOPs add up to the profile's, op by op (an independent sum over the trace)
    by_op: dict[str, float] = {}
    for e in annotated:
        by_op[e["args"]["rooflinectl.op"]] = by_op.get(e["args"]["rooflinectl.op"], 0.0) + e["args"]["rooflinectl.flops"]
    table = data.kernels.groupby("op")["flops"].sum()
    for op, flops in by_op.items():
        assert flops == pytest.approx(table[op])
    mm = next(e for e in annotated if e["args"]["rooflinectl.op"] == "aten::addmm")
    assert mm["args"]["rooflinectl.efficiency"] == pytest.approx(mm["args"]["rooflinectl.roof_time_s"] / (mm["dur"] / 1e6), rel=1e-3)
    # still a torch.profiler trace: our own parser (the same format HTA and Perfetto read) takes it
    assert len(from_chrome_trace(trace).ops) > 0
    assert load_capture(str(capture_path)).trace is not None  # the raw capture under its new name


def test_real_h200_kernels_are_annotated() -> None:
    with gzip.open(REAL / "gpt2_fwd_eager.trace.json.gz") as handle:
        raw = json.load(handle)
    meta = json.loads((REAL / "gpt2_fwd_eager.trace.json.gz.meta.json").read_text())
    trace = from_chrome_trace(raw)
    ceilings = Ceilings("NVIDIA H200", "cuda", {"dram": Roof(4.8e12, "spec")},
                        {"tensor.bf16": Roof(9.89e14, "spec"), "simt.fp32": Roof(6.7e13, "spec")})
    metadata = {"allow_tf32_matmul": False, "allow_tf32_cudnn": True, **meta.get("metadata", {})}
    table, summary, setup = analyse_trace(trace, "cuda", metadata, ceilings)
    data = ProfileData(kernels=table, ceilings=ceilings, metadata=metadata, summary=summary, setup_kernels=setup)
    launches = attribute(trace, "cuda", metadata).launches
    assert annotate(raw, launches, data) == len(launches)  # every attributed launch found among the events
    uploads = [e for e in raw["traceEvents"] if e.get("cat") == "gpu_memcpy" and "rooflinectl.bytes" in e.get("args", {})]
    assert uploads and all(e["args"]["rooflinectl.bytes"] > 0 for e in uploads)  # the weight upload (setup) too
    kernels = [e for e in raw["traceEvents"] if e.get("cat") == "kernel" and "rooflinectl.bound" in e.get("args", {})]
    assert kernels and all(e["args"]["External id"] is not None for e in kernels)  # torch's own args kept
    gemms = [e for e in kernels if "gemm" in e["args"]["rooflinectl.op"] or e["args"]["rooflinectl.op"] in ("aten::mm", "aten::addmm")]
    assert gemms and all(e["args"]["rooflinectl.flops"] > 0 for e in gemms)
