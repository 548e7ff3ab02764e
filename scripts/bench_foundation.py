"""Foundation benchmark and golden-trace recorder (run on the GPU machine by scripts/gpu-check).

For a bf16 MLP and a naive attention (matmul, softmax, matmul):
- timing distortion: total kernel time under rooflinectl's capture (record_shapes, module
  scopes, Triton hook) against a plain torch.profiler run of the same workload, median of
  alternating repeats;
- the share of kernel time with a known cost, GEMM FLOPs against 2*M*N*K, element-wise bytes
  against the tensors' sizes, and the bound of each kernel family;
- raw traces saved for tests/data (attribution of CUDA kernels tested on CPU in CI).
Writes JSON and markdown into the folder given as the first argument.
"""

from __future__ import annotations

import datetime as dt
import json
import statistics
import sys
from pathlib import Path

import torch

from rooflinectl.attribution.join import attribute
from rooflinectl.capture.run.runner import profile_calls
from rooflinectl.capture.run.session import export_trace, save_capture
from rooflinectl.pipeline import profile_data


def mlp_workload(batch: int = 4096, width: int = 4096):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(width, 4 * width), torch.nn.GELU(),
                                torch.nn.Linear(4 * width, width)).cuda().to(torch.bfloat16)
    x = torch.randn(batch, width, device="cuda", dtype=torch.bfloat16)

    def step() -> None:
        with torch.no_grad():
            model(x)
    return step, {"M": batch, "K": width, "N": 4 * width}


def attention_workload(batch: int = 8, heads: int = 16, seq: int = 2048, dim: int = 64):
    torch.manual_seed(0)
    q, k, v = (torch.randn(batch, heads, seq, dim, device="cuda", dtype=torch.bfloat16) for _ in range(3))

    def step() -> None:
        scores = torch.matmul(q, k.transpose(-2, -1)) * dim ** -0.5
        torch.matmul(torch.softmax(scores, dim=-1), v)
    return step, {"B": batch * heads, "S": seq, "D": dim}


def plain_kernel_time_s(fn, iters: int) -> float:
    prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                              torch.profiler.ProfilerActivity.CUDA])
    prof.start()
    for _ in range(iters):
        fn()
    torch.cuda.synchronize()
    prof.stop()
    trace = export_trace(prof)
    return sum(float(e.get("dur", 0)) for e in trace["traceEvents"] if e.get("cat") == "kernel") / 1e6


def ours_kernel_time_s(fn, iters: int) -> float:
    """Kernel time as the profile counts it: the capture's profiler-overhead probe (200 tiny
    kernels before the workload, never counted) is left out, as the profile leaves it out."""
    capture = profile_calls(fn, (), {}, warmup=0, iters=iters, device_kind="cuda")
    launches = attribute(capture.trace, "cuda", capture.metadata).launches
    return float(launches.loc[~launches["kernel"].str.startswith(("Memset", "Memcpy")), "time_s"].sum())


def distortion(fn, iters: int = 10, repeats: int = 5) -> dict[str, float]:
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    plain, ours = [], []
    for _ in range(repeats):
        plain.append(plain_kernel_time_s(fn, iters))
        ours.append(ours_kernel_time_s(fn, iters))
    p, o = statistics.median(plain), statistics.median(ours)
    return {"plain_kernel_time_s": p, "rooflinectl_kernel_time_s": o, "distortion": o / p - 1.0,
            "plain_runs_s": plain, "rooflinectl_runs_s": ours}


def main(out_dir: str) -> None:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    results = {"device": torch.cuda.get_device_name(), "date": dt.date.today().isoformat(),
               "torch": torch.__version__, "workloads": {}}
    for name, make in (("mlp_bf16", mlp_workload), ("attention_naive_bf16", attention_workload)):
        fn, dims = make()
        entry: dict = {"dims": dims, **distortion(fn)}
        capture = profile_calls(fn, (), {}, warmup=2, iters=3, device_kind="cuda")
        save_capture(capture, str(out / f"h200_{name}.capture.json.gz"))
        data = profile_data(capture, command=["bench_foundation", name], completed=True, exit_code=0)
        table = data.kernels
        entry["known_cost_time_share"] = data.summary["known_cost_time_share"]
        entry["rows"] = table[["kernel", "op", "op_family", "shapes", "calls", "time_s", "flops", "bytes",
                               "intensity", "efficiency", "bound", "precision", "unit", "cost_source"]].to_dict("records")
        results["workloads"][name] = entry
        print(f"{name}: distortion {entry['distortion']:+.2%}, known cost {entry['known_cost_time_share']:.1%}")
        print(table[["kernel", "op", "calls", "time_s", "flops", "bytes", "bound", "efficiency"]].to_string(max_colwidth=50))
    (out / "foundation.json").write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "out")
