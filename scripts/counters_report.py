"""The accuracy page (docs/benchmarks/accuracy.md) from profiles with counters (GPU machine run).

python scripts/counters_report.py DIR > accuracy.md
DIR holds suite.profile.json (scripts/counters_suite.py), example profiles (*.profile.json) and
bench_counters.TARGET.md (scripts/bench_counters.py). Targets (issue 12):
- analytic useful FLOPs within 3% of measured on GEMM/conv problems without padded work;
- analytic bytes within 20% of DRAM bytes on single-pass streaming kernels over 4x L2;
- memory/compute classification agreeing on at least 95% of GPU time;
- sampled counters at most 1/20 of plain ncu's wall time (bench_counters.TARGET.md).
Every figure comes from the profiles; misses are listed with their numbers.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from counters_suite import module_kind  # noqa: E402

from rooflinectl.analysis.validate import agreement, validate_families, validate_rows  # noqa: E402
from rooflinectl.outputs.profile_file import load_profile  # noqa: E402
from rooflinectl.outputs.validate_render import validate_markdown  # noqa: E402
from rooflinectl.units import percent  # noqa: E402

FLOPS_TOLERANCE = 0.03
BYTES_TOLERANCE = 0.20


def _fmt(x: float) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


def per_problem(rows: pd.DataFrame, families: tuple[str, ...], kinds: tuple[str, ...], measured: str,
                analytic: str) -> pd.DataFrame:
    """Analytic / measured summed per problem, over the problem's rows of the given op families."""
    tagged = rows.assign(problem=[(module_kind(m) or ("", ""))[0] for m in rows["module"]],
                         kind=[(module_kind(m) or ("", ""))[1] for m in rows["module"]])
    chosen = tagged[tagged["kind"].isin(kinds) & tagged["op_family"].isin(families)]
    out = chosen.groupby(["problem", "kind"], sort=False).agg(
        analytic=(analytic, "sum"), measured=(measured, "sum"), time_s=("time_s", "sum"),
        kernels=("kernel", lambda s: ", ".join(sorted({str(k)[:40] for k in s})))).reset_index()
    out["ratio"] = out["analytic"] / out["measured"]
    return out


def main(folder: str) -> None:
    d = Path(folder)
    suite = load_profile(d / "suite.profile.json")
    table = suite.kernels.assign(module=suite.kernels["module"].astype(str))
    rows = validate_rows(table, suite.ceilings).join(table["module"])
    counters = suite.summary.get("counters", {})
    lines = [f"# Cost model against Nsight Compute ({suite.metadata.get('device_name')}, "
             f"{str(suite.metadata.get('created', ''))[:10]}, ncu {counters.get('ncu_version')})", "",
             "Produced by `scripts/gpu.d/90-counters.sh` (profiles with `--counters ncu`, `rooflinectl validate`, "
             "`scripts/counters_report.py`). Ratios are analytic / measured. DRAM bytes are measured with caches "
             "flushed before each kernel (ncu `--cache-control all`); a kernel's writes are the larger of ncu's DRAM "
             "writes and the bytes its SMs stored into L2 (an output that fits in L2 is still there when the kernel "
             "ends: its write-back comes later).", ""]

    flops = per_problem(rows, ("gemm", "conv"), ("gemm", "conv", "gemm-padded", "conv-other"), "measured_flops", "flops")
    unpadded = flops[flops["kind"].isin(["gemm", "conv"])]
    ok = (unpadded["ratio"] - 1).abs() <= FLOPS_TOLERANCE
    lines += [f"## FLOPs: GEMM and convolution problems without padded work: {int(ok.sum())} of {len(unpadded)} "
              f"within {FLOPS_TOLERANCE:.0%} (target: all)", "",
              "| problem | kind | useful FLOPs (model) | executed FLOPs (ncu) | ratio | within 3% | kernels |",
              "|---|---|---:|---:|---:|---|---|"]
    for r in flops.itertuples(index=False):
        mark = "yes" if abs(r.ratio - 1) <= FLOPS_TOLERANCE else ("expected (padded)" if "padded" in r.kind or r.kind == "conv-other" else "**no**")
        lines.append(f"| {r.problem} | {r.kind} | {r.analytic:.4g} | {r.measured:.4g} | {_fmt(r.ratio)} | {mark} | `{r.kernels}` |")

    streams = per_problem(rows, ("elementwise", "reduction", "copy"), ("stream",), "dram_bytes", "bytes")
    ok_b = (streams["ratio"] - 1).abs() <= BYTES_TOLERANCE
    lines += ["", f"## Bytes: single-pass streaming kernels over 512 MiB tensors (8x L2): {int(ok_b.sum())} of "
              f"{len(streams)} within {BYTES_TOLERANCE:.0%} (target: all)", "",
              "| problem | minimum bytes (model) | DRAM bytes (ncu) | ratio | within 20% |", "|---|---:|---:|---:|---|"]
    for r in streams.itertuples(index=False):
        lines.append(f"| {r.problem} | {r.analytic:.4g} | {r.measured:.4g} | {_fmt(r.ratio)} | "
                     f"{'yes' if abs(r.ratio - 1) <= BYTES_TOLERANCE else '**no**'} |")

    lines += ["", "## Memory/compute classification (time-weighted, target at least 95%)", "",
              "| profile | compared (share of kernel time) | classified memory/compute by both | bound agrees |",
              "|---|---:|---:|---:|"]
    all_rows = []
    for path in sorted(d.glob("*.profile.json")):
        data = load_profile(path)
        if (data.summary.get("counters") or {}).get("status") != "measured":
            lines.append(f"| {path.name} | no counters: {(data.summary.get('counters') or {}).get('reason', '')[:80]} | | |")
            continue
        prow = validate_rows(data.kernels, data.ceilings)
        total = float(data.kernels["time_s"].sum())
        a = agreement(prow, total)
        all_rows.append(prow)
        lines.append(f"| {path.name} | {percent(a['compared_time_share'])} | {percent(a['classified_time_share'])} | "
                     f"{percent(a['agree_time_share'])} |")
    if all_rows:
        combined = pd.concat(all_rows)
        a = agreement(combined, float(combined["time_s"].sum()))
        lines.append(f"| all of the above | | | **{percent(a['agree_time_share'])}** |")
        misses = combined[combined["agree"] == False].sort_values("time_s", ascending=False).head(10)  # noqa: E712
        if len(misses):
            lines += ["", "Disagreements, largest time first:", "",
                      "| op · shapes | model bound | measured bound | FLOPs ratio | bytes ratio | time |",
                      "|---|---|---|---:|---:|---:|"]
            for r in misses.itertuples(index=False):
                lines.append(f"| {r.op} · {r.shapes} | {r.bound} | {r.measured_bound} | {_fmt(r.flops_ratio)} | "
                             f"{_fmt(r.bytes_ratio)} | {r.time_s * 1e6:.1f} us |")

    benches = sorted(d.glob("bench_counters*.md"))  # one per target (scripts/bench_counters.py --target)
    lines += ["", *(b.read_text() for b in benches)] if benches else \
        ["", "## Counters speed\n\nbench_counters.*.md missing: the speed benchmark did not run.", ""]
    lines += ["## Per op family (suite)", "", validate_markdown(suite.summary, validate_rows(suite.kernels, suite.ceilings),
                                                               validate_families(validate_rows(suite.kernels, suite.ceilings)),
                                                               agreement(rows, float(suite.kernels['time_s'].sum())), 60)]
    print("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
