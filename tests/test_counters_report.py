"""scripts/counters_report.py on hand-made profiles (the GPU run's report must not fail there)."""

from __future__ import annotations

import runpy
from pathlib import Path

from advice_tables import elementwise, gemm, profile

from rooflinectl.outputs.profile_file import save_profile

ROOT = Path(__file__).resolve().parents[1]


def with_counters(row: dict, module: str, *, flops_factor: float, bytes_factor: float) -> dict:
    return {**row, "module": module, "measured_launches": 1, "measured_flops": row["flops"] * flops_factor,
            "dram_bytes": row["bytes"] * bytes_factor, "l2_bytes": row["bytes"], "l1_bytes": row["bytes"],
            "measured_precision": "tensor.bf16" if row["op_family"] == "gemm" else "simt.fp32"}


def test_report_computes_the_targets(tmp_path, capsys):
    rows = [
        with_counters(gemm("aten::mm", 1024, 1024, 1024), "P_mm_1024", flops_factor=1.01, bytes_factor=1.0),
        with_counters(gemm("aten::mm", 8192, 1024, 1024), "P_mm_tall", flops_factor=1.10, bytes_factor=1.0),
        with_counters(gemm("aten::mm", 1000, 1000, 1000), "P_mm_odd", flops_factor=1.15, bytes_factor=1.0),
        with_counters(elementwise("aten::clone", (128 * 2**20,), dtype="float32", family="copy"), "P_stream_copy",
                      flops_factor=1.0, bytes_factor=1.05),
        with_counters(elementwise("aten::relu", (128 * 2**20,), dtype="float32"), "P_stream_relu",
                      flops_factor=1.0, bytes_factor=1.5),
    ]
    data = profile(rows)
    data.summary["counters"] = {"status": "measured", "ncu_version": "2099.1", "launches_measured": 5,
                                "launches_counted": 5, "rows_measured": 5, "rows": 5, "time_share_measured": 1.0}
    save_profile(data, tmp_path / "suite.profile.json")
    (tmp_path / "bench_counters.md").write_text("## Counters speed\n\nratio 0.04\n")
    runpy.run_path(str(ROOT / "scripts" / "counters_report.py"), run_name="report")["main"](str(tmp_path))
    text = capsys.readouterr().out
    assert "1 of 2 within 3%" in text  # mm_1024 (1/1.01) passes, mm_tall (1/1.10) misses
    assert "| mm_tall | gemm |" in text and "**no**" in text
    assert "| mm_odd | gemm-padded |" in text and "expected (padded)" in text
    assert "1 of 2 within 20%" in text  # copy 1/1.05 passes, relu 1/1.5 misses
    assert "ratio 0.04" in text and "## Per op family (suite)" in text
