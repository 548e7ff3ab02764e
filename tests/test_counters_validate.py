"""`rooflinectl validate`: analytic against measured, on the recorded H200 pair and on hand tables."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from click.testing import CliRunner
from counters_data import H200, NCU_ROWS, REGION_LAUNCHES, ncu_text, recorded_profile

from rooflinectl.analysis.validate import agreement, validate_families, validate_rows
from rooflinectl.attribution.counters import join_measurements, launch_keys
from rooflinectl.capture.ncu.csv_parse import measured_launches
from rooflinectl.cli.main import main
from rooflinectl.outputs.profile_file import save_profile
from rooflinectl.pipeline import add_counters


@pytest.fixture(scope="module")
def measured():
    capture, data, launches = recorded_profile()
    keys = launch_keys(launches, capture.trace)
    region = measured_launches(ncu_text())[NCU_ROWS - REGION_LAUNCHES:]
    return data, add_counters(data, keys, join_measurements(keys, region, None), {"ncu_version": "2025.3.1"})


def test_rows_carry_ratios_against_hand_values(measured):
    _, data = measured
    rows = validate_rows(data.kernels, H200)
    padded = rows[(rows["op"] == "aten::addmm") & rows["shapes"].str.startswith("[1024] x [256, 4096]")].iloc[0]
    # 256 useful rows against 288 rows of tensor work (48-row tiles); the epilogue's bias adds (about
    # M x N FP32 adds, 0.03% of the work) are inside the tolerance
    assert padded["flops_ratio"] == pytest.approx(256 / 288, rel=1e-3)
    assert padded["analytic_roof"] == "tensor.bf16" and padded["measured_precision"] == "tensor.bf16"
    assert rows["time_s"].is_monotonic_decreasing
    assert set(rows["op_family"]) <= {"gemm", "elementwise", "reduction", "norm", "loss", "copy"}


def test_families_sum_before_dividing(measured):
    _, data = measured
    rows = validate_rows(data.kernels, H200)
    fam = validate_families(rows).set_index("op_family")
    gemm = rows[rows["op_family"] == "gemm"]
    assert fam.loc["gemm", "flops_ratio"] == pytest.approx(gemm["flops"].sum() / gemm["measured_flops"].sum())
    # the split-K GEMM's reduce kernel carries part of the op's analytic FLOPs by duration but does
    # almost none of them: per kernel far off, per family within a few percent
    assert gemm["flops_ratio"].max() > 10
    assert 0.95 < fam.loc["gemm", "flops_ratio"] < 1.0


def test_agreement_counts_time_where_both_classify():
    rows = pd.DataFrame({"time_s": [3.0, 1.0, 2.0, 4.0],
                         "agree": [True, False, None, True]})
    got = agreement(rows, total_time_s=20.0)
    assert got["agree_time_share"] == pytest.approx(7.0 / 8.0)
    assert got["classified_time_share"] == pytest.approx(8.0 / 20.0)
    assert got["compared_time_share"] == pytest.approx(10.0 / 20.0)


def test_cli_validate(tmp_path, measured):
    plain, data = measured
    with_counters, without = tmp_path / "c.json", tmp_path / "a.json"
    save_profile(data, with_counters)
    save_profile(plain, without)
    result = CliRunner().invoke(main, ["validate", str(with_counters), "--format", "json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert {f["op_family"] for f in report["families"]} >= {"gemm", "elementwise"}
    assert report["counters"]["launches_measured"] == REGION_LAUNCHES
    table = CliRunner().invoke(main, ["validate", str(with_counters), "--top", "3"])
    assert table.exit_code == 0 and "By op family" in table.output
    markdown = CliRunner().invoke(main, ["validate", str(with_counters), "--format", "markdown"])
    assert markdown.output.startswith("## rooflinectl validate") and "| gemm |" in markdown.output
    # kernel names are markdown-escaped and so not in a code span, where a backslash shows as itself
    kernel_cells = [line.split(" | ")[2] for line in markdown.output.splitlines() if " · " in line]
    assert kernel_cells and not any("`" in cell for cell in kernel_cells), kernel_cells
    assert any("\\_" in cell for cell in kernel_cells), kernel_cells  # names with underscores, escaped
    groups = len(report["kernels"])
    assert f"3 of {groups} groups shown (--all" in table.output  # what is left out is said, and how to see it
    every = CliRunner().invoke(main, ["validate", str(with_counters), "--all"], env={"COLUMNS": "200"})
    assert every.exit_code == 0 and "groups shown" not in every.output
    written = tmp_path / "v.md"  # the format from -o's extension, as in every command
    assert CliRunner().invoke(main, ["validate", str(with_counters), "-o", str(written)]).exit_code == 0
    assert written.read_text() == markdown.output
    refused = CliRunner().invoke(main, ["validate", str(without)])
    assert refused.exit_code == 2 and "holds no counters" in refused.output and "--counters ncu" in refused.output
