"""Check the analytic cost model against Nsight Compute counters, kernel by kernel (GPU machine).

python scripts/ncu_check.py OUT_DIR
Runs a small bf16/fp32 workload (GEMM, GELU, softmax, layer norm, a cast, a reduction) once
under `ncu --clock-control none` inside an NVTX range, and once under rooflinectl's capture;
pairs the kernels in launch order and writes OUT_DIR/ncu_check.md and .json: our FLOPs against
ncu's (tensor-core ops + CUDA-core add/mul/2*fma, half ops weighted as ncu's own sections do),
our bytes against ncu's DRAM bytes read + written (cold caches: ncu flushes between passes).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import os
import subprocess
import sys
from pathlib import Path

METRICS = {
    "tensor": [f"sm__ops_path_tensor_src_{p}.sum" for p in ("bf16_dst_fp32", "fp16", "tf32_dst_fp32", "fp8", "int8")],
    "fadd": ["smsp__sass_thread_inst_executed_op_fadd_pred_on.sum"],
    "fmul": ["smsp__sass_thread_inst_executed_op_fmul_pred_on.sum"],
    "ffma": ["smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"],
    "hadd": ["smsp__sass_thread_inst_executed_op_hadd_pred_on.sum"],
    "hmul": ["smsp__sass_thread_inst_executed_op_hmul_pred_on.sum"],
    "hfma": ["smsp__sass_thread_inst_executed_op_hfma_pred_on.sum"],
    "dram": ["dram__bytes_read.sum", "dram__bytes_write.sum"],
    "time": ["gpu__time_duration.sum"],
}


def workload():
    import torch

    torch.manual_seed(0)
    x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    ln = torch.nn.LayerNorm(4096, device="cuda", dtype=torch.bfloat16)
    s = torch.randn(64, 2048, 2048, device="cuda", dtype=torch.bfloat16)
    f = torch.randn(8192, 8192, device="cuda")

    def step() -> None:
        y = x @ w
        torch.nn.functional.gelu(y)
        torch.softmax(s, dim=-1)
        ln(y)
        f.to(torch.bfloat16)
        f.sum(dim=1)
    return step


def child() -> None:
    import torch

    step = workload()
    step()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push("roi")
    step()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()


def _number(text: str) -> float:
    text = text.replace(",", "").strip()
    try:
        return float(text)
    except ValueError:
        return 0.0


def run_ncu() -> list[dict[str, float | str]]:
    metrics = ",".join(m for group in METRICS.values() for m in group)
    cmd = ["ncu", "--clock-control", "none", "--nvtx", "--nvtx-include", "roi/", "--metrics", metrics,
           "--csv", "--page", "raw", "--print-units", "base", sys.executable, __file__, "--child"]
    done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "NCU_CHILD": "1"}, timeout=300)
    lines = [ln for ln in done.stdout.splitlines() if not ln.startswith("==")]
    rows = list(csv.DictReader(io.StringIO("\n".join(lines))))
    rows = [r for r in rows if r.get("Kernel Name") and r.get("ID", "").strip().isdigit()]
    out = []
    for r in rows:
        get = {k: sum(_number(r.get(m, "0")) for m in ms) for k, ms in METRICS.items()}
        flops = get["tensor"] + get["fadd"] + get["fmul"] + 2 * get["ffma"] + 2 * get["hadd"] + 2 * get["hmul"] + 4 * get["hfma"]
        out.append({"kernel": r["Kernel Name"], "ncu_flops": flops, "ncu_dram_bytes": get["dram"],
                    "ncu_time_s": get["time"] / 1e9, "ncu_tensor_flops": get["tensor"]})
    if not out:
        raise SystemExit(f"ncu returned no kernel rows:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return out


def ours() -> list[dict[str, float | str]]:
    from rooflinectl.attribution.join import attribute
    from rooflinectl.capture.run.runner import profile_calls

    capture = profile_calls(workload(), (), {}, warmup=1, iters=1, device_kind="cuda")
    launches = attribute(capture.trace, "cuda", capture.metadata).launches
    kernels = launches[~launches["kernel"].str.startswith(("Memset", "Memcpy"))]  # ncu profiles kernels only
    return kernels[["kernel", "op", "flops", "bytes", "time_s"]].to_dict("records")


def main(out_dir: str) -> None:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    theirs, mine = run_ncu(), ours()
    rows = []
    for a, b in zip(mine, theirs):
        rows.append({**a, "ncu_kernel": b["kernel"], **{k: v for k, v in b.items() if k != "kernel"}})
    import torch

    lines = [f"# Cost model against Nsight Compute ({torch.cuda.get_device_name()}, {dt.date.today()})", "",
             "| op | kernel | our FLOPs | ncu FLOPs | ratio | our bytes | ncu DRAM bytes | ratio |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        fr = r["flops"] / r["ncu_flops"] if r["ncu_flops"] else float("nan")
        br = r["bytes"] / r["ncu_dram_bytes"] if r["ncu_dram_bytes"] else float("nan")
        lines.append(f"| {r['op']} | {r['kernel'][:50]} | {r['flops']:.4g} | {r['ncu_flops']:.4g} | {fr:.3f} | "
                     f"{r['bytes']:.4g} | {r['ncu_dram_bytes']:.4g} | {br:.3f} |")
    lines.append("")
    lines.append(f"kernels paired in launch order: {len(rows)} (ours {len(mine)}, ncu {len(theirs)}); "
                 "FLOPs: ncu counts tensor-core ops plus CUDA-core add/mul/2*fma instructions (transcendentals "
                 "are FMA polynomials there, one FLOP each here); DRAM bytes are cold-cache, and writes still "
                 "in L2 when a kernel ends are not counted by ncu for that kernel.")
    (out / "ncu_check.md").write_text("\n".join(lines) + "\n")
    (out / "ncu_check.json").write_text(json.dumps(rows, indent=1, default=str))
    print("\n".join(lines))


if __name__ == "__main__":
    if "--child" in sys.argv:
        child()
    else:
        main(sys.argv[1] if len(sys.argv) > 1 else "out")
