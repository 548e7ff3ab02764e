"""How much of a real trace's GPU time has a known cost, and what the rest is.

python scripts/coverage_report.py [TRACE.json.gz | CAPTURE.capture.json.gz ...] [--warmup-steps 2] [--top 8]

Runs each torch.profiler Chrome trace (default: the H200 traces under tests/data/h200_real/), or
capture written by `rooflinectl profile --save-capture`, through rooflinectl's attribution on CPU
and prints, per trace:
- the known-cost share of GPU time (kernels, memcpy, memset) over the whole trace, and over the
  timed loop: the launches after the end of the `--warmup-steps`-th `Optimizer.step`
  annotation (the scripts under examples/real run 2 warm-up steps, then the timed ones); a
  trace without optimizer annotations has no timed loop here;
- the top uncosted kernels with their ops and why they have no cost;
- the kernel groups above their roof against the H200's spec roofs (a point above its roof
  means the counts are wrong).
The whole trace includes the script's setup (weight initialisation, uploads): rooflinectl's own
steady-state detection is another piece of work; this script only cuts at optimizer steps.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rooflinectl.analysis.roofline import place_on_roofline  # noqa: E402
from rooflinectl.attribution.group import group_launches  # noqa: E402
from rooflinectl.attribution.join import attribute  # noqa: E402
from rooflinectl.capture.read.raw import RawTrace  # noqa: E402
from rooflinectl.capture.read.trace import from_chrome_trace  # noqa: E402
from rooflinectl.capture.run.session import load_capture  # noqa: E402
from rooflinectl.ceilings.build import gpu_spec_ceilings  # noqa: E402
from rooflinectl.ceilings.detect import GpuInfo  # noqa: E402

DATA = ROOT / "tests" / "data" / "h200_real"
DEFAULT_TRACES = ["resnet50_train_eager", "gpt2_train_eager", "gpt2_fwd_eager", "moe_loop", "moe_grouped"]


def load(path: Path) -> tuple[RawTrace, dict, str]:
    """A RawTrace, the run's facts and its device kind, from a Chrome trace of a GPU run (with its
    .meta.json, if any) or a rooflinectl capture file."""
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        raw = json.load(handle)
    if "traceEvents" not in raw:  # rooflinectl profile --save-capture
        capture = load_capture(str(path))
        return capture.trace, capture.metadata, capture.device_kind
    meta_path = path.with_name(path.name + ".meta.json")
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    return from_chrome_trace(raw), meta, "cuda"


def timed_loop_start_ns(trace: RawTrace, warmup_steps: int) -> int | None:
    """End of the warmup_steps-th Optimizer.step annotation (None: no such step)."""
    steps = sorted(op.end_ns for op in trace.ops
                   if op.category == "user_annotation" and op.name.startswith("Optimizer.step#"))
    if len(steps) <= warmup_steps:
        return None
    return steps[warmup_steps - 1] if warmup_steps > 0 else 0


def share(launches: pd.DataFrame) -> tuple[float, float]:
    """(known-cost share of device time, device time in seconds)."""
    total = float(launches["time_s"].sum())
    known = float(launches.loc[launches["cost_source"] != "none", "time_s"].sum())
    return (known / total if total else float("nan")), total


def report(path: Path, warmup_steps: int, top: int) -> dict:
    started = time.perf_counter()
    trace, meta, device_kind = load(path)
    metadata = {"allow_tf32_matmul": meta.get("allow_tf32_matmul", False),
                "allow_tf32_cudnn": meta.get("allow_tf32_cudnn", True)}
    launches = attribute(trace, device_kind, metadata).launches
    whole, whole_s = share(launches)
    cut = timed_loop_start_ns(trace, warmup_steps)
    loop = launches[launches["launch_ns"] >= cut] if cut is not None else None
    loop_share, loop_s = share(loop) if loop is not None else (float("nan"), 0.0)
    print(f"== {path.name}  ({time.perf_counter() - started:.1f} s to load and attribute)")
    what = "GPU time" if device_kind == "cuda" else "CPU op time"
    print(f"   whole trace: {whole:.2%} of {whole_s * 1e3:.2f} ms {what} has a known cost")
    if loop is not None:
        print(f"   timed loop (after Optimizer.step #{warmup_steps}): {loop_share:.2%} of {loop_s * 1e3:.2f} ms")
    else:
        print("   timed loop: no Optimizer.step annotations to cut at")
    unknown = launches[launches["cost_source"] == "none"]
    if len(unknown):
        by = unknown.groupby(["op", "kernel", "cost_note"], dropna=False)["time_s"].sum().sort_values(ascending=False)
        print("   top uncosted (share of whole-trace GPU time, op, kernel, why):")
        for (op, kernel, why), t in by.head(top).items():
            print(f"     {t / whole_s:6.2%}  {op or '-'}  {kernel[:70]}  [{why}]")
    ceilings = gpu_spec_ceilings(GpuInfo(name="NVIDIA H200", compute_capability=(9, 0), sms=132,
                                         max_sm_clock_hz=1.98e9))
    table, _ = group_launches(launches)
    placed = place_on_roofline(table, ceilings)
    above = placed[placed["above_roof"]].sort_values("time_s", ascending=False)
    if len(above):
        print(f"   {len(above)} group(s) above their H200 spec roof (counts to check):")
        for row in above.head(top).itertuples():
            print(f"     eff {row.efficiency:6.1%}  {row.op}  {row.shapes[:60]}  {row.kernel[:50]}")
    return {"trace": path.name, "whole": whole, "whole_ms": whole_s * 1e3, "loop": loop_share, "loop_ms": loop_s * 1e3,
            "above_roof": len(above)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("traces", nargs="*", help="Chrome traces (.json.gz); default: tests/data/h200_real/")
    parser.add_argument("--warmup-steps", type=int, default=2, help="optimizer steps before the timed loop")
    parser.add_argument("--top", type=int, default=8)
    args = parser.parse_args()
    paths = [Path(p) for p in args.traces] or [DATA / f"{name}.trace.json.gz" for name in DEFAULT_TRACES]
    results = [report(p, args.warmup_steps, args.top) for p in paths]
    print("\ntrace                                     whole    timed loop")
    for r in results:
        loop = "   n/a" if r["loop"] != r["loop"] else f"{r['loop']:7.2%}"
        print(f"{r['trace']:40s} {r['whole']:7.2%}   {loop}")


if __name__ == "__main__":
    main()
