"""FIGURE and CHECK lines for scripts/gpu.d/77-user-triton.sh (issue 37): the user kernels of
examples/user_triton.py in a profile, against Nsight Compute's DRAM bytes, and their advice.

    python scripts/user_kernels_figures.py PROFILE [--counters PROFILE_WITH_NCU] [--size N] ...

The exact minimum bytes each kernel must move are computed here from the example's sizes (each
input read once, each output written once), independently of the profiler's argument walk.
"""

from __future__ import annotations

import argparse
import math
import sys

import pandas as pd

from rooflinectl.api import load

USER_KERNELS = ("add_kernel", "strided_add_kernel", "softmax_kernel", "scale_kernel", "axpb_kernel")


def exact_bytes(size: int, rows: int, cols: int) -> dict[str, float]:
    """Per call: the adds read two fp32 vectors and write one; softmax reads and writes a bf16
    [rows, cols]; the scale and the extension read one fp32 vector and write one."""
    return {"add_kernel": 3 * size * 4, "strided_add_kernel": 3 * size * 4, "softmax_kernel": 2 * rows * cols * 2,
            "scale_kernel": 2 * size * 4, "axpb_kernel": 2 * size * 4}


def _rows(kernels: pd.DataFrame, name: str) -> pd.DataFrame:
    return kernels[kernels["kernel"].astype(str).str.contains(name, regex=False)
                   & ~kernels["kernel"].astype(str).str.startswith("strided_" if name == "add_kernel" else "\0")]


def _fmt(value: float, digits: int = 3) -> str:
    return "nan" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}g}"


def kernel_figures(kernels: pd.DataFrame, exact: dict[str, float]) -> None:
    for name in USER_KERNELS:
        rows = _rows(kernels, name)
        if rows.empty:
            print(f"CHECK {name}: not in the profile")
            continue
        calls = float(rows["calls"].sum())
        bytes_per_call = float(rows["bytes"].sum()) / calls
        time_per_call = float(rows["time_s"].sum()) / calls
        row = rows.iloc[0]
        print(f"FIGURE {name}: op {row['op']}, {int(calls)} calls, {bytes_per_call / 1e6:.1f} MB/call "
              f"(exact minimum {exact[name] / 1e6:.1f} MB, ratio {bytes_per_call / exact[name]:.4f}), "
              f"{time_per_call * 1e6:.1f} us/call, {bytes_per_call / time_per_call / 1e12:.2f} TB/s, "
              f"bound {row['bound']}, efficiency {_fmt(float(row['efficiency']))}, source {row['cost_source']}, "
              f"flops {_fmt(float(rows['flops'].sum(min_count=len(rows))))}, grid {_fmt(float(row['blocks']))} x "
              f"{_fmt(float(row['threads_per_block']))} threads, {_fmt(float(row['registers_per_thread']))} regs")


def counter_figures(kernels: pd.DataFrame) -> None:
    if "dram_bytes" not in kernels.columns:
        print("CHECK counters: the profile has no dram_bytes column")
        return
    for name in USER_KERNELS:
        rows = _rows(kernels, name)
        measured = rows[rows["measured_launches"].fillna(0) > 0] if "measured_launches" in rows else rows.iloc[:0]
        if measured.empty:
            print(f"CHECK {name}: no counters")
            continue
        analytic, dram = float(measured["bytes"].sum()), float(measured["dram_bytes"].sum())
        row = measured.iloc[0]
        print(f"FIGURE {name} ncu: analytic {analytic / row['calls'] / 1e6:.1f} MB/call, ncu DRAM "
              f"{dram / row['calls'] / 1e6:.1f} MB/call, analytic/ncu {analytic / dram:.3f}; measured FLOPs "
              f"{_fmt(float(measured['measured_flops'].sum()))}, flops now "
              f"{_fmt(float(measured['flops'].sum(min_count=len(measured))))}, "
              f"source {row['cost_source']}, efficiency {_fmt(float(row['efficiency']))}, bound {row['bound']}")


def advice_figures(path: str) -> None:
    profile = load(path)
    report = profile.advise()
    for name in USER_KERNELS:
        ids = sorted({f.rule_id for f in report.findings if name in f.subject
                      and not (name == "add_kernel" and f.subject.startswith("strided_"))})
        print(f"FIGURE advice {name}: {', '.join(ids) or 'no finding'}")
    for f in report.findings:
        if any(n in f.subject for n in USER_KERNELS):
            print(f"  {f.rule_id} [{f.subject}]: {f.evidence} | {f.recommendation[:160]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("profile")
    parser.add_argument("--counters", help="the same run's profile with --counters ncu")
    parser.add_argument("--size", type=int, default=1 << 26)
    parser.add_argument("--rows", type=int, default=16384)
    parser.add_argument("--cols", type=int, default=4096)
    args = parser.parse_args(argv)
    kernels = load(args.profile).kernels
    share = load(args.profile).data.summary.get("known_cost_time_share")
    print(f"FIGURE known cost share: {_fmt(share)}")
    kernel_figures(kernels, exact_bytes(args.size, args.rows, args.cols))
    advice_figures(args.profile)
    if args.counters:
        counter_figures(load(args.counters).kernels)
    return 0


if __name__ == "__main__":
    sys.exit(main())
