"""How GEMMs and kernels fill the GPU: grid.wave-quantisation, kernel.low-occupancy, gemm.skinny
and gemm.batch-small, on rows the pipeline builds from traces in torch.profiler's format
(tests/gpu_trace.py) and from the raw H200 traces, against hand-computed figures."""

from __future__ import annotations

import pytest
from advice_tables import h200_ceilings, profile, triton_row
from gpu_trace import Launch, traced_profile
from real_traces import real_profile

from rooflinectl.analysis.advice import advise

H200 = h200_ceilings()  # 132 SMs, bf16 989 TFLOP/s, 4.8 TB/s: ridge 206 FLOP/B
NVJET_128x128 = "nvjet_sm90_tst_128x128_64x6_2x1_v_bz_TNT"  # tile 128 (along N) x 128 (along M)


def findings(data, rule_id):
    return advise(data).findings_of(rule_id)


def test_a_gemm_with_a_partly_empty_last_wave():
    """[640, 4096] x [4096, 8448] on nvjet 128x256 tiles (128 along N, 256 along M: cuBLAS is
    column-major): 3 x 66 = 198 tiles on a persistent grid of 132: 2 waves, the second with 66
    tiles on 66 SMs; 1 - 198 / 264 = 25% of the slot-time idle."""
    gemm = Launch("aten::mm", [[640, 4096], [4096, 8448]], "nvjet_sm90_tst_128x256_64x4_2x1_v_bz_coopA_TNT", 80.0,
                  grid=(2, 66, 1))
    data = traced_profile([gemm], H200)
    (f,) = findings(data, "grid.wave-quantisation")
    assert (f.numbers["items"], f.numbers["slots"], f.numbers["waves"]) == (198, 132, 2)
    assert (f.numbers["last_wave_items"], f.numbers["busy_sms_last_wave"]) == (66, 66)
    assert f.numbers["idle_share"] == pytest.approx(1 - 198 / 264)
    assert f.est_saving_s == pytest.approx(80e-6 * (1 - 198 / 264))
    # 2 M-tiles (512 rows) make 132 tiles: one full wave; 4 (1024 rows) are past 1.5 x 640
    assert "M = 512 (1 full waves)" in f.recommendation and "1024" not in f.recommendation


def test_full_or_many_waves_and_short_kernels_are_left_alone():
    full = Launch("aten::mm", [[512, 4096], [4096, 4224]], NVJET_128x128, 80.0, grid=(2, 66, 1))  # 132 tiles
    many = Launch("aten::mm", [[8192, 4096], [4096, 4224]], NVJET_128x128, 900.0, grid=(2, 66, 1))  # 2112: 16 waves
    short = Launch("aten::mm", [[640, 4096], [4096, 4224]], NVJET_128x128, 15.0, grid=(2, 66, 1))
    for launch in (full, many, short):
        assert findings(traced_profile([launch], H200), "grid.wave-quantisation") == []


def test_a_custom_kernel_grid_just_past_one_wave():
    """A Triton kernel launched with 140 blocks of 256 threads using 168 registers each: one block
    per SM (168 x 32 = 5376 registers per warp, 3 warps per quarter of the register file, 12
    warps, so one 8-warp block), 132 slots: 2 waves, 8 blocks in the last."""
    row = triton_row("heavy_kernel", flops=1e9, bytes_=4e9, time_s=2e-3, calls=10, grid=(140, 1, 1),
                     block=(256, 1, 1), registers=168, shared=0)
    (f,) = findings(profile([row]), "grid.wave-quantisation")
    assert (f.numbers["items"], f.numbers["slots"], f.numbers["last_wave_items"]) == (140, 132, 8)
    assert f.est_saving_s == pytest.approx(min(2e-3 * (1 - 140 / 264), 2e-3 - 4e9 / 4.8e12))
    assert "multiple of 132 blocks" in f.recommendation


def test_library_kernels_other_than_gemms_are_not_the_users_grid():
    """PyTorch's RNG kernels launch SMs x 8 blocks: 1056 on 660 slots in the MoE run, 20% idle,
    but no user can change that grid."""
    assert findings(real_profile("moe_loop", H200), "grid.wave-quantisation") == []


def test_a_register_heavy_memory_bound_kernel_gets_occupancy_advice():
    """168 registers x 256 threads: one 8-warp block per SM, 12.5% occupancy; streaming 4 GB in
    2 ms is 2 TB/s, 42% of the DRAM roof."""
    row = triton_row("copy_kernel", flops=1e6, bytes_=4e9, time_s=2e-3, calls=10, grid=(20000, 1, 1),
                     block=(256, 1, 1), registers=168, shared=0)
    (f,) = findings(profile([row]), "kernel.low-occupancy")
    assert f.numbers["occupancy"] == pytest.approx(8 / 64) and "registers" in f.evidence
    roof_s = 4e9 / 4.8e12
    assert f.est_saving_s == pytest.approx(2e-3 - max(2e-3 * (8 / 64) / 0.5, roof_s / 0.8))
    assert "BLOCK_SIZE" in f.recommendation


def test_occupancy_advice_needs_a_full_grid_a_slow_kernel_and_a_known_configuration():
    light = triton_row("copy_kernel", flops=1e6, bytes_=4e9, time_s=2e-3, calls=10, grid=(20000, 1, 1),
                       block=(256, 1, 1), registers=32, shared=0)  # 100% occupancy
    few = triton_row("copy_kernel", flops=1e6, bytes_=4e9, time_s=2e-3, calls=10, grid=(100, 1, 1),
                     block=(256, 1, 1), registers=168, shared=0)  # fewer blocks than SMs: grid.small's case
    fast = triton_row("copy_kernel", flops=1e6, bytes_=4e9, time_s=1e-3, calls=10, grid=(20000, 1, 1),
                      block=(256, 1, 1), registers=168, shared=0)  # 83% of the roof
    unknown = triton_row("copy_kernel", flops=1e6, bytes_=4e9, time_s=2e-3, calls=10, grid=(20000, 1, 1))
    for row in (light, few, fast, unknown):
        assert findings(profile([row]), "kernel.low-occupancy") == []


def test_a_skinny_gemm_is_memory_bound_and_says_how_many_rows_make_it_fat():
    """[64, 8192] x [8192, 8192] bf16: intensity ~63 FLOP/B, under half the ridge (206); at the
    ridge M = 206.04 x 2 x 8192 x 8192 / (2 x 8192 x 8192 - 206.04 x 2 x 16384) = 216.9 rows."""
    gemm = Launch("aten::mm", [[64, 8192], [8192, 8192]], "nvjet_sm90_tst_64x64_64x13_1x2_h_bz_splitK_NTT", 150.0)
    data = traced_profile([gemm], H200)
    (f,) = findings(data, "gemm.skinny")
    bytes_ = (64 * 8192 * 2 + 8192 * 8192) * 2
    assert f.numbers["intensity"] == pytest.approx(2 * 64 * 8192 * 8192 / bytes_)
    assert f.est_saving_s == pytest.approx(150e-6 - bytes_ / 4.8e12 / 0.8)
    assert "from about 217 rows" in f.recommendation


def test_a_short_reduction_is_memory_bound():
    gemm = Launch("aten::mm", [[8192, 32], [32, 8192]], "nvjet_sm90_tst_128x128_64x6_2x1_v_bz_TNT", 120.0)
    (f,) = findings(traced_profile([gemm], H200), "gemm.skinny")
    assert f.numbers["K"] == 32 and "fold it into the next GEMM" in f.recommendation


def test_large_or_decode_gemms_are_not_skinny():
    large = Launch("aten::mm", [[8192, 4096], [4096, 4096]], NVJET_128x128, 600.0)
    decode = Launch("aten::mm", [[8, 8192], [8192, 8192]], "gemv2T_kernel_val", 150.0)  # quant.weight-only's
    for launch in (large, decode):
        assert findings(traced_profile([launch], H200), "gemm.skinny") == []


def small_mm(dur_us: float = 5.0) -> Launch:
    return Launch("aten::mm", [[256, 128], [128, 128]], "nvjet_sm90_tst_64x64_64x13_1x2_h_bz_NNT", dur_us)


GELU = Launch("aten::gelu", [[256, 128]], "vectorized_elementwise_kernel<gelu>", 2.0, block=(128, 1, 1), registers=32)


def test_a_loop_of_same_shape_gemms_becomes_one_bmm():
    """Two iterations of 16 back-to-back [256, 128] x [128, 128] mm of 5 us: per run, 80 us against
    one bmm at 0.7 of the roof (16 x 34 ns of traffic: under the 2 us kernel floor): 78 us."""
    launches = ([GELU] + [small_mm()] * 16) * 2
    (f,) = findings(traced_profile(launches, H200), "gemm.batch-small")
    assert (f.numbers["runs"], f.numbers["run_length"], f.numbers["launches_in_runs"]) == (2, 16, 32)
    assert f.est_saving_s == pytest.approx(2 * (16 * 5e-6 - 2e-6))
    assert "torch.bmm" in f.recommendation and "[16, 256, 128] @ [16, 128, 128]" in f.recommendation


def test_a_split_k_reduction_between_the_launches_does_not_break_the_run():
    """mlp_small's split-K product: an nvjet kernel and cuBLAS's splitKreduce helper per mm."""
    reduce = Launch("aten::mm", [[256, 128], [128, 128]],
                    "void cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16>", 2.0)
    (f,) = findings(traced_profile([GELU] + [small_mm(), reduce] * 8, H200), "gemm.batch-small")
    assert f.numbers["run_length"] == 8


def test_a_layer_stack_is_not_a_batch():
    """The same GEMM shape with other kernels between (layers one after the other) cannot be batched."""
    assert findings(traced_profile([small_mm(), GELU] * 16, H200), "gemm.batch-small") == []
    assert findings(traced_profile([small_mm()] * 3, H200), "gemm.batch-small") == []
    assert findings(real_profile("moe_loop", H200), "gemm.batch-small") == []  # experts of different loads
