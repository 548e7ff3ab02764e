"""How GEMMs and kernels fill the GPU: grid.wave-quantisation, kernel.low-occupancy, gemm.skinny
and gemm.batch-small, on rows the pipeline builds from traces in torch.profiler's format
(tests/gpu_trace.py) and from the raw H200 traces, against hand-computed figures."""

from __future__ import annotations

import pytest
from advice_tables import h200_ceilings, profile, triton_row
from gpu_trace import Launch, traced_profile
from real_traces import real_profile
from recorded_examples import ADVICE, example_capture, step_ms

from rooflinectl.analysis.advice import Thresholds, advise
from rooflinectl.capture.run.session import load_capture
from rooflinectl.pipeline import profile_data

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


WIDE_BLOCK_ROWS, WIDE_BLOCK_COLS = 131072, 256  # examples/wide_block.py's defaults


def wide_block_row(registers: int, time_per_call_s: float, calls: int = 5) -> dict:
    """examples/wide_block.py's kernel as the profile records it: one 4-warp program per row,
    3 FLOP and 8 bytes (fp32 in, fp32 out) per element, declared through launch_metadata."""
    elements = WIDE_BLOCK_ROWS * WIDE_BLOCK_COLS
    return triton_row("rms_rows", flops=3.0 * elements * calls, bytes_=8.0 * elements * calls, flops_key="flops32",
                      time_s=time_per_call_s * calls, calls=calls, grid=(WIDE_BLOCK_ROWS, 1, 1), block=(128, 1, 1),
                      registers=registers, shared=16, declared_extra={"family": "norm"})


def test_the_wide_block_example_gets_occupancy_advice_and_its_fix_none():
    """examples/wide_block.py before its fix: BLOCK_SIZE 16384 on 4 warps compiles to 168
    registers per thread (Triton 3.6, sm_90). 168 x 32 = 5376 registers per warp (a multiple of
    256); a quarter of the 64K register file holds 16384 // 5376 = 3 warps, the SM 12, so 3 blocks
    of 4 warps: 12 / 64 = 18.75%. At 350 us per call (an assumed time, not a measurement) the
    268 MB it moves take 55.9 us at 4.8 TB/s: 16.0% of the roof. After the fix (BLOCK_SIZE 256:
    16 registers) the SM holds 64 // 4 = 16 blocks, every warp: nothing to say."""
    (f,) = findings(profile([wide_block_row(168, 350e-6)]), "kernel.low-occupancy")
    assert (f.numbers["occupancy"], f.numbers["blocks_per_sm"], f.numbers["warps_per_sm"]) == (12 / 64, 3, 12)
    roof_s = 8.0 * WIDE_BLOCK_ROWS * WIDE_BLOCK_COLS / 4.8e12
    assert f.numbers["efficiency"] == pytest.approx(roof_s / 350e-6)
    assert f.est_saving_s == pytest.approx(5 * (350e-6 - max(350e-6 * (12 / 64) / 0.5, roof_s / 0.8)))
    assert ("168 registers per thread x 128 threads, 16 B shared memory per block: 3 block(s), 12 warps per SM "
            "(18.8% occupancy, limited by registers); the kernel reaches 16.0% of its memory roof") in f.evidence
    assert "a smaller BLOCK_SIZE" in f.recommendation
    assert findings(profile([wide_block_row(16, 80e-6)]), "kernel.low-occupancy") == []


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


LAYER_NORM = Launch("aten::native_layer_norm", [[64, 2304]],
                    "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>", 3.0,
                    block=(256, 1, 1), registers=32)
QKV_KERNEL = "nvjet_sm90_tst_64x8_64x16_2x4_h_bz_bias_TNT"  # a cuBLAS bias kernel for few rows (resnet50's fc)


def test_the_qkv_projections_example_is_skinny_and_not_a_batch():
    """examples/qkv_projections.py before its fix: per layer a LayerNorm, then F.linear for q, k
    and v, each addmm([2304], [64, 2304], [2304, 2304]) in bf16, 4 layers. Bytes: bias, input,
    weight and output once, 2 x (2304 + 64 x 2304 + 2304^2 + 64 x 2304) = 11.2 MB; FLOPs
    2 x 64 x 2304^2: 60.6 FLOP/B, under half the ridge (989 / 4.8 = 206). At 7 us per call (an
    assumed time, not a measurement) it reaches 2.34 / 7 = 33.4% of its roof; the estimate is the
    12 calls at 0.8 of the roof. At the ridge M = 206.04 x 2 x 2304^2 / (2 x 2304^2 - 206.04 x 2
    x 4608) = 250.9 rows. The LayerNorm ends each run of same-shape products at 3, under
    gemm.batch-small's 4."""
    data = traced_profile(([LAYER_NORM] + [Launch("aten::addmm", [[2304], [64, 2304], [2304, 2304]], QKV_KERNEL,
                                                  7.0)] * 3) * 4, H200)
    (f,) = findings(data, "gemm.skinny")
    bytes_ = 2 * (2304 + 64 * 2304 + 2304 * 2304 + 64 * 2304)
    assert (f.numbers["M"], f.numbers["N"], f.numbers["K"]) == (64, 2304, 2304)
    assert f.numbers["intensity"] == pytest.approx(2 * 64 * 2304 * 2304 / bytes_)
    assert f.est_saving_s == pytest.approx(12 * (7e-6 - bytes_ / 4.8e12 / 0.8))
    assert "[64, 2304] x [2304, 2304] has M = 64: intensity 61 FLOP/B, under the ridge 206 FLOP/B" in f.evidence
    assert "reaches 33.4% of its DRAM roof" in f.evidence
    assert "from about 251 rows" in f.recommendation and "Q, K and V projections as one Linear" in f.recommendation
    assert findings(data, "gemm.batch-small") == []


@pytest.mark.parametrize(("dur_us", "flagged"), [(11.0, False), (16.0, True)])
def test_the_merged_qkv_product_is_flagged_only_under_half_its_roof(dur_us, flagged):
    """The fix's one [64, 2304] x [2304, 6912] product moves 2 x (6912 + 64 x 2304 + 2304 x 6912
    + 64 x 6912) = 33.0 MB: 6.88 us at 4.8 TB/s, 62.6% of the roof in 11 us, 43.0% in 16 us.
    Still skinny (61 FLOP/B), so it is flagged again if cuBLAS leaves it under half its roof."""
    merged = Launch("aten::addmm", [[6912], [64, 2304], [2304, 6912]], QKV_KERNEL, dur_us)
    assert bool(findings(traced_profile(([LAYER_NORM] + [merged]) * 4, H200), "gemm.skinny")) is flagged


def test_large_or_decode_gemms_are_not_skinny():
    large = Launch("aten::mm", [[8192, 4096], [4096, 4096]], NVJET_128x128, 600.0)
    decode = Launch("aten::mm", [[8, 8192], [8192, 8192]], "gemv2T_kernel_val", 150.0)  # quant.weight-only's
    for launch in (large, decode):
        assert findings(traced_profile([launch], H200), "gemm.skinny") == []


def small_mm(dur_us: float = 5.0) -> Launch:
    return Launch("aten::mm", [[256, 128], [128, 128]], "nvjet_sm90_tst_64x64_64x13_1x2_h_bz_NNT", dur_us)


GELU = Launch("aten::gelu", [[256, 128]], "vectorized_elementwise_kernel<gelu>", 2.0, block=(128, 1, 1), registers=32)


def test_a_loop_of_same_shape_gemms_becomes_one_bmm():
    """Two iterations of 16 back-to-back [256, 128] x [128, 128] mm of 5 us. The traces of
    tests/gpu_trace.py put 10 us between one kernel's end and the next one's start (2 us to the
    next op, which launches its kernel 8 us in): each run spans 16 x 5 + 15 x 10 = 230 us on the
    device. One bmm at 0.7 of the roof (16 x 34 ns of traffic) is under the 2 us kernel floor:
    228 us per run, of which 150 us is the GPU waiting between launches."""
    launches = ([GELU] + [small_mm()] * 16) * 2
    (f,) = findings(traced_profile(launches, H200), "gemm.batch-small")
    assert (f.numbers["runs"], f.numbers["run_length"], f.numbers["launches_in_runs"]) == (2, 16, 32)
    assert f.numbers["span_s"] == pytest.approx(2 * 230e-6) and f.numbers["busy_s"] == pytest.approx(2 * 80e-6)
    assert f.est_saving_s == pytest.approx(2 * (230e-6 - 2e-6))
    assert f.idle_saving_s == pytest.approx(2 * 150e-6)
    assert "torch.bmm" in f.recommendation and "[16, 256, 128] @ [16, 128, 128]" in f.recommendation
    assert "span 230.00 us each" in f.evidence


def test_the_profilers_own_cost_per_launch_comes_off_the_span_but_never_the_kernels():
    """With 3 us of profiler cost per recorded op and kernel, the two runs' 460 us lose 32 x 3 us:
    364 us, less two bmm floors. At 20 us per launch the span would fall under the kernels' own
    160 us: the kernels stay, so the saving is their time less the two bmm."""
    launches = ([GELU] + [small_mm()] * 16) * 2
    for overhead_s, expected_s in ((3e-6, 364e-6 - 4e-6), (20e-6, 160e-6 - 4e-6)):
        data = traced_profile(launches, H200)
        data.metadata["profiler_overhead_per_op_s"] = overhead_s
        (f,) = findings(data, "gemm.batch-small")
        assert f.est_saving_s == pytest.approx(expected_s), overhead_s


def test_a_profile_without_run_spans_counts_the_kernels_only_and_says_so():
    """A profile file written before the spans were kept: 16 x 5 us - 2 us per run, from the launch
    order alone."""
    data = traced_profile(([GELU] + [small_mm()] * 16) * 2, H200)
    del data.summary["back_to_back_runs"]
    (f,) = findings(data, "gemm.batch-small")
    assert f.est_saving_s == pytest.approx(2 * (16 * 5e-6 - 2e-6)) and f.idle_saving_s == 0
    assert "records no spans" in f.evidence and "span_s" not in f.numbers


def test_launch_overhead_leaves_the_idle_time_inside_the_runs_to_the_batch_finding():
    """The two runs above plus 10 alternating gelu / [512, 256] x [256, 256] mm (5 us): 54 launches,
    53 gaps of 10 us: 530 us idle. The runs hold 2 x 15 gaps (300 us): gemm.batch-small's. A graph
    saves the other 230 us less 1 us for each launch left (54 - 32 + 2 bmm = 24): 206 us. With
    gemm.batch-small switched off, launch.overhead counts all of it: 530 - 54 = 476 us."""
    other = Launch("aten::mm", [[512, 256], [256, 256]], "nvjet_sm90_tst_64x64_64x13_1x2_h_bz_NNT", 5.0)
    data = traced_profile(([GELU] + [small_mm()] * 16) * 2 + [GELU, other] * 10, H200)
    assert data.summary["device_idle_s"] == pytest.approx(530e-6)
    report = advise(data)
    (graph,), (batch,) = report.findings_of("launch.overhead"), report.findings_of("gemm.batch-small")
    assert batch.idle_saving_s == pytest.approx(300e-6)
    assert graph.numbers["batch_runs_idle_s"] == pytest.approx(300e-6)
    assert graph.est_saving_s == pytest.approx(230e-6 - 24e-6)
    assert "gemm.batch-small's saving" in graph.evidence
    alone = advise(data, Thresholds(disabled_rules=("gemm.batch-small",))).findings_of("launch.overhead")
    assert [f.est_saving_s for f in alone] == [pytest.approx(530e-6 - 54e-6)]


def test_the_h200_small_gemms_estimate_is_near_the_measured_step_saving():
    """examples/small_gemms.py on the H200 (tests/data/advice): 64 mm of 2.1 us per step, launched
    one every ~30 us under the profiler. Measured with CUDA events, no profiler: 1.641 ms per step
    as a loop, 0.035 ms as one bmm. The kernels alone (what the rule counted before) give 0.13 ms;
    the runs' spans, the profiler's 2.65 us per launch taken out, give about 1.77 ms."""
    _, data = example_capture("small_gemms")
    (f,) = findings(data, "gemm.batch-small")
    measured_s = (step_ms("small_gemms", "before") - step_ms("small_gemms", "after")) / 1e3
    per_step_s = f.est_saving_s / data.summary["region_runs"]
    assert 0.8 < per_step_s / measured_s < 1.25, (per_step_s, measured_s)


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


def _recorded(name: str, phase: str):
    """examples/NAME.py's capture on the H200 (tests/data/advice) as a profile, spec H200 roofs."""
    capture = load_capture(str(ADVICE / f"h200_{name}.{phase}.capture.json.gz"))
    return profile_data(capture, command=[f"examples/{name}.py"], completed=True, ceilings=h200_ceilings())


def _found_before_not_after(name: str, rule_id: str):
    """examples/NAME.py's before-profile and its one RULE_ID finding; the after-profile has none."""
    before = _recorded(name, "before")
    (f,) = findings(before, rule_id)
    assert findings(_recorded(name, "after"), rule_id) == []
    return before, f


@pytest.mark.parametrize(("name", "rule_id", "evidence"), [
    # 148 programs (132 x 1 1/8) of one block per SM slot on 132 SMs: 1 full wave and one of
    # 148 - 132 = 16 programs; split 32 ways, the finding goes. Measured: 0.645 -> 0.437 ms per step
    ("wave_tail", "grid.wave-quantisation", ("148 blocks on 132 slots", "the last with 16 items on 16 of 132 SMs")),
    # 168 registers x 128 threads a block: 65536 registers hold 3 such blocks (3 x 21504 = 64512),
    # 12 of 64 warps; BLOCK_SIZE 256, the finding goes. Measured: 0.498 -> 0.096 ms per step
    ("wide_block", "kernel.low-occupancy", ("168 registers per thread x 128 threads", "12 warps per SM (18.8% occupancy")),
])
def test_an_h200_capture_gets_its_finding_near_the_measured_saving_and_loses_it_when_fixed(name, rule_id, evidence):
    """The example on the H200: the rule fires before the fix, not after, and its estimate per step
    is within 2x of the step time the fix saved (the example's own CUDA events, no profiler)."""
    before, f = _found_before_not_after(name, rule_id)
    assert all(part in f.evidence for part in evidence), f.evidence
    measured_s = (step_ms(name, "before") - step_ms(name, "after")) / 1e3
    per_step_s = f.est_saving_s / before.summary["region_runs"]
    assert 0.5 < per_step_s / measured_s < 2.0, (per_step_s, measured_s)


def test_the_h200_qkv_capture_gets_its_skinny_finding_near_the_kernel_saving():
    """examples/qkv_projections.py on the H200: Q, K and V as three [64, 2304] x [2304, 2304] bf16
    addmm per layer, then one [6912, 2304] product. The rule estimates the GEMMs' own distance from
    the roof: compared with the addmm kernel time the fixed capture really has (not with the step,
    which also loses two launches per layer: launch.overhead's part)."""
    before, f = _found_before_not_after("qkv_projections", "gemm.skinny")
    assert "has M = 64" in f.evidence
    after = _recorded("qkv_projections", "after")

    def addmm_s(data) -> float:
        return float(data.kernels.loc[data.kernels["op"] == "aten::addmm", "time_s"].sum())

    kernel_saving_s = addmm_s(before) - addmm_s(after)
    assert 0.5 < f.est_saving_s / kernel_saving_s < 2.0, (f.est_saving_s, kernel_saving_s)
