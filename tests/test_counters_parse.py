"""Nsight Compute's CSV and the launch sampling, on the recorded H200 CSV and hand-made launches."""

from __future__ import annotations

import math

import pytest
from counters_data import NCU_ROWS, ncu_text

from rooflinectl.capture.ncu.csv_parse import (
    NcuOutputError,
    measured_launches,
    parse_number,
    parse_triple,
)
from rooflinectl.capture.ncu.metrics import metrics_to_request
from rooflinectl.capture.ncu.sampling import (
    LaunchKey,
    function_name,
    invocation_numbers,
    kernel_id_filter,
    plan_numbers,
    predict,
)


def test_numbers_and_triples():
    assert parse_number("10,496") == 10496.0
    assert parse_number("1,961,743,220.02") == pytest.approx(1961743220.02)
    assert parse_number("") is None and parse_number("n/a") is None
    assert parse_triple("(2, 64, 1)") == (2, 64, 1)
    assert parse_triple("") is None


def test_recorded_csv_reads_every_launch_with_hand_checked_values():
    launches = measured_launches(ncu_text())
    assert len(launches) == NCU_ROWS
    gemm = launches[2]  # the first Linear's forward: [256, 1024] x [1024, 4096] in bf16
    assert gemm.name == "nvjet_sm90_tst_128x64_64x8_1x2_h_bz_bias_TNT"
    assert (gemm.grid, gemm.block) == ((2, 64, 1), (384, 1, 1))
    assert gemm.flops_by_roof["tensor.bf16"] == 2 * 256 * 1024 * 4096  # tensor ops are 2 per MAC
    assert gemm.main_roof == "tensor.bf16"
    assert gemm.time_s == pytest.approx(8.256e-6)
    assert gemm.dram_bytes == 8_942_592 + 0  # read + write as printed
    # the weight (1024 x 4096 bf16, 8 MiB) is read once from DRAM, plus the 0.5 MiB activation
    assert 1024 * 4096 * 2 < gemm.dram_bytes < 1.1 * (1024 * 4096 + 256 * 1024) * 2
    assert gemm.l2_bytes == 35_214_528 and gemm.l1_bytes == 65_536
    gelu = launches[3]  # GELU over 256 x 4096 bf16: CUDA-core math only
    assert gelu.flops_by_roof.get("tensor.bf16", 0) == 0 and gelu.main_roof == "simt.fp32"
    assert gelu.flops_by_roof["simt.fp32"] == pytest.approx(19_937_877)  # fadd + fmul + 2 x ffma


def test_half_ops_are_packed_pairs():
    from rooflinectl.capture.ncu.metrics import measured_launch

    m = measured_launch("k", None, None, {"smsp__sass_thread_inst_executed_op_hfma_pred_on.sum": 10.0,
                                          "smsp__sass_thread_inst_executed_op_hadd_pred_on.sum": 3.0,
                                          "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": 5.0})
    assert m.flops_by_roof == {"simt.fp16": 46.0, "simt.fp32": 10.0}
    assert math.isnan(m.dram_bytes)  # not collected: unknown, never zero


def test_output_without_a_table_is_refused():
    with pytest.raises(NcuOutputError):
        measured_launches("==PROF== Connected to process 1\nloss 1.0\n==WARNING== No kernels were profiled.\n")


def test_user_output_and_prof_lines_around_the_table_are_ignored():
    text = ncu_text()
    assert "loss 1.9922" in text  # the program printed into ncu's output when this was recorded
    assert len(measured_launches(text + "\n==PROF== Report: x.ncu-rep\n")) == NCU_ROWS


def test_metric_list_follows_the_gpu():
    wanted, missing = metrics_to_request(None)
    assert "gpu__time_duration.sum" in wanted and "sm__ops_path_tensor_src_fp64.sum" in missing
    ampere = {m.split(".")[0] for m in wanted} - {"sm__ops_path_tensor_src_fp8"}  # an A100 has no fp8 tensor path
    wanted, missing = metrics_to_request(ampere)
    assert "sm__ops_path_tensor_src_fp8.sum" in missing and "sm__ops_path_tensor_src_fp8.sum" not in wanted
    assert "lts__t_bytes.sum" in wanted
    # a query that lists none of the metrics every GPU has was misread: fall back to the checked list
    assert metrics_to_request({"gpu__time_duration"}) == metrics_to_request(None)


def test_function_names_agree_between_ncu_and_the_profiler():
    ncu = "void at::<unnamed>::vectorized_layer_norm_kernel<c10::BFloat16, float, 0>(int, T2, const T1 *)"
    torch_name = ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float, "
                  "false>(int, float, c10::BFloat16 const*)")
    assert function_name(ncu) == function_name(torch_name) == "vectorized_layer_norm_kernel"
    assert function_name("triton_poi_fused_add_0") == "triton_poi_fused_add_0"


def _key(name, grid, group, work=None):
    return LaunchKey(name, grid, (128, 1, 1), 0, group, f"op of row {group}" if work is None else work)


# a layer of three kernels repeated twice; the add kernel runs at two sizes with one launch config
SEQ = [_key("gemm", (8, 8, 1), 0), _key("add", (64, 1, 1), 1), _key("add", (64, 1, 1), 2),
       _key("gemm", (8, 8, 1), 0), _key("add", (64, 1, 1), 1), _key("add", (64, 1, 1), 2)]


def test_invocations_are_numbered_per_launch_config():
    assert invocation_numbers(SEQ) == [1, 1, 2, 2, 3, 4]
    assert invocation_numbers(SEQ, "function") == [1, 1, 2, 2, 3, 4]


def test_plan_asks_for_one_launch_of_each_class_at_the_least_cost():
    # number 1 covers gemm and add row 1 (2 launches measured); then number 4 covers add row 2 at
    # the cost of 1 launch, where number 2 would cost 2 (it also selects the second gemm)
    numbers = plan_numbers(SEQ, [True] * 6, 1)
    assert numbers == [1, 4]
    assert predict(SEQ, numbers, "name") == [0, 1, 5]
    assert {SEQ[i].group for i in predict(SEQ, numbers, "name")} == {0, 1, 2}
    assert kernel_id_filter(numbers) == ":::^(1|4)$"


def test_plan_respects_eligibility_samples_and_budget():
    assert plan_numbers(SEQ, [False, False, False, True, True, True], 1) == [2, 3, 4]
    assert plan_numbers(SEQ, [True] * 6, 2) == [1, 2, 3, 4]
    assert plan_numbers(SEQ, [True] * 6, 0) is None
    assert predict(SEQ, None, "config", launch_count=4) == [0, 1, 2, 3]


def test_setup_launches_are_numbered_but_never_planned():
    # a warm-up iteration (group -1: setup) before the steady one: ncu numbers its launches too,
    # so the steady launches are the second invocations, and only those are asked for
    warm = [_key("gemm", (8, 8, 1), -1), _key("add", (64, 1, 1), -1), _key("add", (64, 1, 1), -1)]
    steady = [_key("gemm", (8, 8, 1), 0), _key("add", (64, 1, 1), 1), _key("add", (64, 1, 1), 2)]
    numbers = plan_numbers(warm + steady, [True] * 6, 1)
    assert numbers == [2, 3, 4]
    assert predict(warm + steady, numbers, "config") == [2, 3, 4, 5]  # one setup launch is measured anyway


def test_dram_writes_include_what_the_kernel_left_in_l2():
    """ncu flushes the caches before a replay, so an output that fits in L2 is still there when the
    kernel ends and ncu's DRAM write counter misses it: the L2 stores count as the writes."""
    from rooflinectl.capture.ncu.metrics import measured_launch

    read, stored_sectors = 3_000_000.0, 100_000.0  # a kernel storing 3.2 MB that stays in L2
    m = measured_launch("k", None, None, {"dram__bytes_read.sum": read, "dram__bytes_write.sum": 1_024.0,
                                          "lts__t_sectors_srcunit_tex_op_write.sum": stored_sectors})
    assert m.dram_bytes == read + 32 * stored_sectors
    assert m.dram_write_bytes == 1_024.0 and m.l2_store_bytes == 3_200_000.0
    # DRAM writes above the stores (evictions counted in full) stand as ncu counted them
    m = measured_launch("k", None, None, {"dram__bytes_read.sum": read, "dram__bytes_write.sum": 5e6,
                                          "lts__t_sectors_srcunit_tex_op_write.sum": stored_sectors})
    assert m.dram_bytes == read + 5e6
    # a report without the L2 stores (older runs, tests/data) keeps ncu's DRAM writes
    m = measured_launch("k", None, None, {"dram__bytes_read.sum": read, "dram__bytes_write.sum": 1_024.0})
    assert m.dram_bytes == read + 1_024.0 and math.isnan(m.l2_store_bytes)
