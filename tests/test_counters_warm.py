"""The warm-cache counters on CPU: the warm run's command line and output, the memory level the
counters decide, and validate's level agreement, against hand-computed expectations; end to end
through a fake `ncu` (tests/fake_ncu.py) that prints the recorded H200 rows, DRAM bytes scaled
by FAKE_NCU_WARM_DRAM in the warm run (--cache-control none)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from counters_data import H200, recorded_profile
from test_counters_run import collect, fake_ncu  # noqa: F401 - the fixture

from rooflinectl.analysis.counter_levels import (
    counters_levels,
    dram_binding_share,
    dram_peak_bytes_per_s,
    level_agreement,
    level_summary,
    warm_beyond_peak,
    with_counters_levels,
)
from rooflinectl.analysis.roofline import place_on_roofline
from rooflinectl.capture.ncu.command import CounterRunSpec, NcuInfo, ncu_command
from rooflinectl.capture.ncu.csv_parse import measured_launches
from rooflinectl.capture.ncu.metrics import ALL_METRICS
from rooflinectl.capture.ncu.warm import WARM_METRICS, launch_passes, single_pass_only, warm_spec
from rooflinectl.cli.main import main
from rooflinectl.outputs.profile_file import save_profile

INFO = NcuInfo("/opt/ncu", "2025.3.1", {"--metrics", "--csv", "--page", "--log-file", "--profile-from-start",
                                        "--clock-control", "--cache-control", "--print-units", "--kernel-id",
                                        "--kernel-name-base", "--launch-count", "--export"})


def _value(cmd: list[str], option: str) -> str:
    return cmd[cmd.index(option) + 1]


def test_the_warm_run_leaves_the_caches_alone_and_asks_for_dram_bytes_only(tmp_path):
    cold = CounterRunSpec(metrics=list(ALL_METRICS), kernel_id=":::^(1|3)$", launch_count=50,
                          log_path=str(tmp_path / "ncu.log"), report_path=str(tmp_path / "r.ncu-rep"))
    cold_cmd, _ = ncu_command(INFO, cold, ["python", "child.py"])
    warm_cmd, _ = ncu_command(INFO, warm_spec(cold, tmp_path / "warm.log"), ["python", "child.py"])
    assert _value(cold_cmd, "--cache-control") == "all"
    assert _value(warm_cmd, "--cache-control") == "none"
    assert _value(warm_cmd, "--metrics") == "dram__bytes_read.sum,dram__bytes_write.sum"
    # the same launches as the cold run, so the two join to the same groups; no second report
    assert _value(warm_cmd, "--kernel-id") == ":::^(1|3)$" and _value(warm_cmd, "--launch-count") == "50"
    assert _value(warm_cmd, "--clock-control") == "none" and "--export" not in warm_cmd
    assert _value(warm_cmd, "--log-file") == str(tmp_path / "warm.log")


WARM_LOG = """==PROF== Connected to process 7 (/usr/bin/python3.12)
==PROF== Profiling "vectorized_elementwise_kernel" - 0: 0%....50%....100% - 1 pass
==PROF== Profiling "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT" - 1: 0%....50%....100% - 3 passes
==PROF== Disconnected from process 7
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","dram__bytes_read.sum","dram__bytes_write.sum"
"","","","","","","","","","","","byte","byte"
"0","7","python3.12","h","vectorized_elementwise_kernel","1","7","(128, 1, 1)","(8192, 1, 1)","0","9.0","1,048,576","32,768"
"1","7","python3.12","h","nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT","1","7","(384, 1, 1)","(132, 1, 1)","0","9.0","50,331,648","0"
"""


def test_warm_output_parses_and_a_replayed_launch_is_dropped():
    measured = measured_launches(WARM_LOG)
    assert [m.dram_bytes for m in measured] == [1_048_576 + 32_768, 50_331_648]  # read + write, no L2 stores asked
    assert all(m.flops == 0 and math.isnan(m.l2_bytes) for m in measured)
    assert launch_passes(WARM_LOG) == [1, 3]
    # ncu's lines may follow the program's own output on one line when both share a stream
    assert launch_passes('step 3 ...==PROF== Profiling "k(float *)" - 2: 0%....50%....100% - 12 passes\n') == [12]
    kept, dropped = single_pass_only(measured, launch_passes(WARM_LOG))
    assert dropped == 1 and kept[0].dram_bytes == 1_081_344 and math.isnan(kept[1].dram_bytes)
    # progress lines that do not pair with the rows: any replay drops them all
    kept, dropped = single_pass_only(measured, [3])
    assert dropped == 2 and all(math.isnan(m.dram_bytes) for m in kept)
    assert single_pass_only(measured, [1])[1] == 0


def _table() -> pd.DataFrame:
    # bytes (model), dram_bytes (cold), dram_bytes_warm, analytic level
    return pd.DataFrame({
        "op": ["mul 16MB", "copy 1GB", "model over-counts", "no warm", "h2d copy", "unknown cost", "gemm"],
        "bytes": [32e6, 2e9, 100e6, 10e6, 4e6, np.nan, 50e6],
        "dram_bytes": [33e6, 2.1e9, 20e6, 10e6, 4e6, 8e6, 80e6],
        "dram_bytes_warm": [1e6, 1.9e9, 18e6, np.nan, 0.0, 1e6, 30e6],
        "memory_level": ["dram", "dram", "l2", "l2", "host_pinned", "dram", "dram"],
        "bound": ["memory", "memory", "memory", "memory", "memory", "memory", "compute"],
        "time_s": [1.0, 4.0, 2.0, 8.0, 16.0, 32.0, 64.0],
        "cost_source": ["analytic", "analytic", "analytic", "analytic", "analytic", "ncu", "analytic"],
    })


SHARE = 0.5  # DRAM roof / cache roof: DRAM's term binds from half of the bytes on


def test_counters_hold_each_group_to_the_level_whose_term_binds():
    levels = counters_levels(_table(), "l2", SHARE)
    # warm 1 of 32 MB: l2; 1.9 of 2 GB: dram; 18 of the model's 100 MB: l2's term binds (a model
    # that over-counts stays above the l2 term and is flagged); no warm figure, a copy over the host
    # link, or no bytes to compare with: undecided; 30 of 50 MB: dram
    assert levels.tolist() == ["l2", "dram", "l2", "", "", "", "dram"]
    # the roofs set the share: with DRAM at 0.7 of the cache's roof, 30 of 50 MB no longer binds
    assert counters_levels(_table(), "l2", 0.7).tolist() == ["l2", "dram", "l2", "", "", "", "l2"]
    assert dram_binding_share(4.67e12, 8.55e12) == pytest.approx(0.546, abs=1e-3)
    assert math.isnan(dram_binding_share(4.67e12, 0.0))


def test_a_warm_figure_dram_could_not_have_moved_in_the_rows_time_leaves_the_analytic_level():
    # the copy's 1.9 GB in 4 s is 0.475 GB/s: beyond a peak of 0.4 GB/s, within one of 0.5. The
    # mul's 1 MB in 1 s and the gemm's 30 MB in 64 s stay within both; a row without warm bytes
    # is never beyond (NaN compares false)
    assert warm_beyond_peak(_table(), 0.4e9).tolist() == [False, True, False, False, False, False, False]
    assert not warm_beyond_peak(_table(), 0.5e9).any()
    levels = counters_levels(_table(), "l2", SHARE, dram_peak_bytes_per_s=0.4e9)
    assert levels.tolist() == ["l2", "", "l2", "", "", "", "dram"]
    out = with_counters_levels(_table(), "l2", SHARE, 0.4e9)
    assert out.loc[1, "memory_level_source"] == "analytic" and out.loc[1, "memory_level"] == "dram"
    assert level_summary(out, 0.4e9)["rows_warm_beyond_peak"] == 1
    assert level_summary(out)["rows_warm_beyond_peak"] == 0  # no peak known: nothing is beyond it
    # the peak: the larger of the spec sheet's DRAM figure and the measured roof
    assert dram_peak_bytes_per_s(H200) == max(H200.memory_roof("dram", fall_back=False).value,
                                              H200.details.get("spec_roofs", {}).get("dram", {}).get("value", 0))


def test_the_counters_level_replaces_the_guess_which_is_kept_beside_it():
    out = with_counters_levels(_table(), "l2", SHARE)
    assert out["memory_level"].tolist() == ["l2", "dram", "l2", "l2", "host_pinned", "dram", "dram"]
    assert out["memory_level_analytic"].tolist() == _table()["memory_level"].tolist()
    assert out["memory_level_source"].tolist() == ["counters", "counters", "counters", "analytic", "analytic",
                                                   "analytic", "counters"]
    again = with_counters_levels(out.assign(dram_bytes_warm=np.nan), "l2", SHARE)  # placed again without warm figures
    assert again["memory_level"].tolist() == _table()["memory_level"].tolist()


def test_a_measured_group_is_held_to_the_slower_of_two_terms():
    ceilings = H200
    cache_bw = ceilings.memory_roof("l2", fall_back=False).value
    dram_bw = ceilings.memory_roof("dram", fall_back=True).value
    table = pd.DataFrame({
        "kernel": ["k"] * 3, "op": ["aten::mul"] * 3, "unit": ["cuda_core"] * 3, "precision": ["fp32"] * 3,
        "flops": [1e3] * 3, "bytes": [30e6] * 3, "time_s": [1e-5] * 3, "calls": [1] * 3,
        "shapes": [""] * 3, "dtype": ["fp32"] * 3, "cost_source": ["analytic"] * 3,
        "memory_level": ["dram"] * 3, "dram_bytes_warm": [1e6, 20e6, 90e6],
    })
    share = dram_binding_share(dram_bw, cache_bw)
    placed = place_on_roofline(with_counters_levels(table, "l2", share), ceilings)
    # 1 MB from DRAM: the cache's term (30 MB at its roof); 20 MB: DRAM's term for 20 MB;
    # 90 MB (re-reads): DRAM's term for the group's 30 MB, never more than its bytes
    expected_s = [30e6 / cache_bw, max(30e6 / cache_bw, 20e6 / dram_bw), 30e6 / dram_bw]
    assert placed["roof_time_s"].tolist() == pytest.approx(expected_s, rel=1e-12)
    assert placed["memory_level"].tolist() == ["l2", "dram", "dram"]  # 20 MB at 4.8 TB/s: 4.2 us > 3.0 us
    assert placed["attainable_flops_per_s"].tolist() == pytest.approx([1e3 / s for s in expected_s], rel=1e-9)


def test_level_agreement_is_the_share_of_decided_memory_bound_time():
    agreed = level_agreement(with_counters_levels(_table(), "l2", SHARE))
    # decided memory-bound rows costed by the model: mul (1 s, dram vs l2: no), copy (4 s, yes),
    # over-count (2 s, l2 and l2: yes); the ncu-costed row and the compute-bound gemm are left out
    assert agreed["level_agree_time_share"] == pytest.approx(6.0 / 7.0)
    assert agreed["level_compared_time_share"] == pytest.approx(7.0 / (1 + 4 + 2 + 8 + 16))
    assert agreed["level_groups"] == 3
    assert agreed["cache_groups_counters"] == 2 and agreed["cache_groups_analytic"] == 1


@pytest.fixture(scope="module")
def recorded():
    return recorded_profile()


@pytest.mark.parametrize(("scale", "level"), [("0.1", "l2"), ("1", "dram")])
def test_end_to_end_the_warm_counters_set_the_level_and_the_roof(fake_ncu, recorded, monkeypatch, scale, level):  # noqa: F811
    monkeypatch.setenv("FAKE_NCU_WARM_DRAM", scale)
    result, said = collect(recorded)
    warm_args = (fake_ncu / "ncu-args.txt.warm").read_text().splitlines()
    assert _value(warm_args, "--cache-control") == "none" and _value(warm_args, "--metrics") == ",".join(WARM_METRICS)
    assert any("caches as the program leaves them" in line for line in said)
    counters = result.summary["counters"]
    assert counters["warm"]["status"] == "measured" and counters["warm"]["passes_max"] == 1
    t = result.kernels
    decided = t[t["memory_level_source"] == "counters"]
    assert len(decided) == counters["rows_warm"] > 0
    # the warm run selects one launch of every row (test_counters_sampling.py: also of rows whose
    # class the cold run measured through another row): every kernel row has its own warm figure
    kernel_rows = ~t["kernel"].str.startswith(("Memcpy", "Memset"))
    assert (t.loc[kernel_rows, "dram_bytes_warm"].notna()).all()
    assert _value(warm_args, "--kernel-id") == counters["warm"]["selection"]
    # warm: scale x (read + write); cold: read + the larger of the writes and the L2 stores
    assert (decided["dram_bytes_warm"] <= float(scale) * decided["dram_bytes"] + decided["calls"]).all()  # rounding: 1 B per launch
    assert (decided["dram_bytes_warm"] > 0).all()
    from_dram = np.fmin(decided["bytes"], decided["dram_bytes_warm"])
    expected = np.where(from_dram >= 4.8 / 10 * decided["bytes"], "dram", "l2")  # H200 fixture: L2 10 TB/s, DRAM 4.8
    assert (decided["memory_level"] == expected).all() and (expected == level).any()
    memory = decided[decided["bound"] == "memory"]
    if len(memory):  # the slower of the two terms
        two_terms_s = np.fmax(memory["bytes"].to_numpy() / 10e12, from_dram[memory.index].to_numpy() / 4.8e12)
        assert memory["roof_time_s"].to_numpy() == pytest.approx(two_terms_s, rel=1e-9)


def test_end_to_end_a_replayed_warm_run_leaves_the_analytic_level(fake_ncu, recorded, monkeypatch):  # noqa: F811
    monkeypatch.setenv("FAKE_NCU_WARM_DRAM", "0.1")
    monkeypatch.setenv("FAKE_NCU_WARM_PASSES", "2")
    result, _ = collect(recorded)
    warm = result.summary["counters"]["warm"]
    assert warm["launches_replayed"] == warm["launches_measured"] > 0 and "not as the program left them" in warm["notes"][0]
    assert (result.kernels["memory_level_source"] == "analytic").all()
    assert result.kernels["dram_bytes_warm"].isna().all()
    monkeypatch.delenv("FAKE_NCU_WARM_PASSES")
    (fake_ncu / "ncu-args.txt.warm").unlink()
    skipped, _ = collect(recorded, warm=False)  # --no-ncu-warm: ncu runs once, the level stays analytic
    assert skipped.summary["counters"]["warm"] == {"status": "off"}
    assert not (fake_ncu / "ncu-args.txt.warm").exists()
    assert (skipped.kernels["memory_level_source"] == "analytic").all()


def test_a_failed_warm_run_keeps_the_cold_counters(fake_ncu, recorded, monkeypatch):  # noqa: F811
    monkeypatch.setenv("FAKE_NCU_WARM_MODE", "program-fails")
    result, _ = collect(recorded)
    counters = result.summary["counters"]
    assert counters["status"] == "measured" and counters["launches_measured"] > 0
    assert counters["warm"]["status"] == "failed" and "exit code 3" in counters["warm"]["reason"]
    assert (result.kernels["memory_level_source"] == "analytic").all()
    assert result.kernels["dram_bytes"].notna().any()


def test_validate_reports_the_level_agreement(fake_ncu, recorded, monkeypatch, tmp_path):  # noqa: F811
    monkeypatch.setenv("FAKE_NCU_WARM_DRAM", "0.1")
    result, _ = collect(recorded)
    path = tmp_path / "p.json"
    save_profile(result, path)
    expected = level_agreement(result.kernels)
    assert expected["level_groups"] > 0
    report = json.loads(CliRunner().invoke(main, ["validate", str(path), "--format", "json"]).output)
    assert report["agreement"]["level_agree_time_share"] == pytest.approx(expected["level_agree_time_share"])
    assert report["agreement"]["level_groups"] == expected["level_groups"]
    assert {"dram_bytes_warm", "memory_level_analytic", "level_agree"} <= set(report["kernels"][0])
    markdown = CliRunner().invoke(main, ["validate", str(path), "--format", "markdown"]).output
    assert f"counters decide {expected['level_groups']} memory-bound groups" in markdown
    assert "| level → counters |" in markdown
    table = CliRunner().invoke(main, ["validate", str(path)])
    assert table.exit_code == 0 and "the analytic guess agrees on" in table.output, table.output


def test_the_counters_line_counts_warm_figures_beyond_drams_peak():
    from rooflinectl.outputs.validate_render import warm_text

    counters = {"warm": {"status": "measured"}, "rows_warm": 40, "rows_cache_counters": 12}
    assert warm_text(counters) == "warm caches: the level of 40 groups (12 l2)"
    text = warm_text({**counters, "rows_warm_beyond_peak": 1})
    assert text.startswith("warm caches: the level of 40 groups (12 l2); 1 kept the analytic level")
