"""Why a GEMM is far from its roof (gemm.alignment, gemm.legacy-kernel): on rows the pipeline
builds from the raw H200 traces (tests/data/h200_real), and from traces in torch.profiler's
format for kernels those runs did not launch (tests/gpu_trace.py)."""

from __future__ import annotations

import pytest
from advice_tables import h200_ceilings
from gpu_trace import Launch, traced_profile
from real_traces import kernel_durations_us, kernel_table, real_profile

from rooflinectl.analysis.advice import advise
from rooflinectl.analysis.advice.gemm_kernels import kernel_alignment, kernel_arch, output_tile
from rooflinectl.ceilings.model import Ceilings, Roof

H200 = h200_ceilings()


def findings(data, rule_id):
    return advise(data).findings_of(rule_id)


_REAL_REPORTS: dict[str, object] = {}
CONVS = ("aten::cudnn_convolution", "aten::convolution_backward")  # of ResNet-50's training step


def real_findings(name: str, rule_id: str):
    """Findings of the recorded run against the H200 spec roofs (each run advised once here;
    ResNet-50's convolutions only, the rest of its step takes seconds to parse)."""
    if name not in _REAL_REPORTS:
        _REAL_REPORTS[name] = advise(real_profile(name, H200, CONVS if name.startswith("resnet") else ()))
    return _REAL_REPORTS[name].findings_of(rule_id)


def test_kernel_names_say_architecture_alignment_and_tile():
    """Names from the H200 traces, read by hand."""
    lm_head = "void cutlass::Kernel2<cutlass_75_tensorop_bf16_s1688gemm_bf16_128x256_nt_align1>(...)"
    assert (kernel_arch(lm_head), kernel_alignment(lm_head), output_tile(lm_head)) == (75, 1, (256, 128))
    nvjet = "nvjet_sm90_tst_192x128_64x5_1x2_h_bz_coopB_bias_NNT"
    assert (kernel_arch(nvjet), kernel_alignment(nvjet), output_tile(nvjet)) == (90, None, (128, 192))
    stem = "void cutlass__5x_cudnn::Kernel<cutlass_tensorop_bf16_s16816fprop_optimized_bf16_256x64_32x4_nhwc_align8>"
    assert (kernel_arch(stem), kernel_alignment(stem)) == (80, 8)
    xmma = "sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x64x64_warpgroupsize1x1x1_g1"
    assert (kernel_arch(xmma), output_tile(xmma)) == (90, (64, 128))
    grouped = "_ZN7cutlass13device_kernelIN2at4cuda6detail25enable_3x_kernel_for_sm9xINS_4gemm6kernel13GemmUniversal"
    assert kernel_arch(grouped) is None  # no tag: never called legacy


def test_tile_orientation_matches_the_grids_of_the_real_traces():
    """cuBLAS tiles are (along N, along M): a non-persistent kernel's grid covers its tiles."""
    table, _ = kernel_table("gpt2_fwd_eager", H200)
    (head,) = table[table["kernel"].str.contains("cutlass_75")].itertuples()
    tile_m, tile_n = output_tile(head.kernel)  # the [2048, 768] x [768, 50257] LM head, tile 128x128
    tiles = -(-2048 // tile_m) * -(-50257 // tile_n)
    assert tiles == 16 * 393 and 6288 <= head.blocks < 6288 * 1.05  # grid [128, 50]: tiles plus a swizzle's rounding


def test_lm_head_vocabulary_gets_padded_with_a_saving_near_the_one_the_h200_measured():
    """GPT-2's LM head ([2048, 768] x [768, 50257], bf16) ran on an align1 cutlass_75 kernel for
    1.68 ms per call; in the compiled runs of the same model Inductor padded N to 50264 and the
    product ran on an sm90 nvjet kernel in 0.23 ms (gpt2_fwd_reduce_overhead): the fix saved 1.44 ms."""
    data = real_profile("gpt2_fwd_eager", H200)
    (f,) = real_findings("gpt2_fwd_eager", "gemm.alignment")
    k = data.kernels
    (row,) = f.rows
    assert "cutlass_75" in k.at[row, "kernel"] and k.at[row, "shapes"] == "[2048, 768] x [768, 50257]"
    assert f.numbers["padded_N"] == 50304 and "50257 -> 50304" in f.recommendation and "align1" in f.evidence
    # the estimate by hand: the aligned bf16 GEMMs' time-weighted efficiency (calls >= 5 us)
    peers = k[(k["op_family"] == "gemm") & ~k["kernel"].str.contains("cutlass_75") & (k["time_s"] / k["calls"] >= 5e-6)]
    peer = peers["roof_time_s"].sum() / peers["time_s"].sum()
    assert f.numbers["peer_efficiency"] == pytest.approx(peer)
    expected = k.at[row, "time_s"] - k.at[row, "roof_time_s"] * 50304 / 50257 / peer
    assert f.est_saving_s == pytest.approx(expected)
    padded_us = kernel_durations_us("gpt2_fwd_reduce_overhead", "aten::mm", [[2048, 768], [768, 50264]])
    assert padded_us and max(padded_us) < 300  # the padded product: 0.23 ms per call
    measured_per_call = k.at[row, "time_s"] / k.at[row, "calls"] - max(padded_us) * 1e-6
    assert 0.7 < (f.est_saving_s / k.at[row, "calls"]) / measured_per_call < 1.3


def test_training_gets_one_finding_for_the_vocabulary_in_every_role():
    """Forward (N), input gradient (K) and weight gradient (M, a transposed operand: the kernel
    says align1) of the LM head are one fix."""
    data = real_profile("gpt2_train_eager", H200)
    (f,) = real_findings("gpt2_train_eager", "gemm.alignment")
    shapes = set(data.kernels.loc[list(f.rows), "shapes"])
    assert shapes == {"[2048, 768] x [768, 50257]", "[2048, 50257] x [50257, 768]", "[50257, 2048] x [2048, 768]"}
    assert "N or K or M = 50257" in f.evidence
    assert f.est_saving_s < data.kernels.loc[list(f.rows), "time_s"].sum()


def test_rgb_stem_convolution_gets_its_channels_padded():
    data = real_profile("resnet50_train_eager", H200, CONVS)
    (f,) = real_findings("resnet50_train_eager", "gemm.alignment")
    k = data.kernels.loc[list(f.rows)]
    assert (k["shapes"].str.contains(r"\[64, 3, 7, 7\]")).all() and f.numbers["padded_C_in"] == 8
    assert "C_in 3 -> 8" in f.recommendation


def test_aligned_or_efficient_gemms_and_cpus_get_no_alignment_finding():
    for name in ("moe_loop", "mlp_small"):
        assert real_findings(name, "gemm.alignment") == []
    fast = [Launch("aten::mm", [[8192, 768], [768, 50257]], "nvjet_sm90_tst_256x128_64x4_2x1_v_bz_coopA_TNN", 250.0),
            Launch("aten::mm", [[8192, 768], [768, 3072]], "nvjet_sm90_tst_256x128_64x4_2x1_v_bz_coopA_TNN", 60.0)]
    assert findings(traced_profile(fast, H200), "gemm.alignment") == []  # 50257 at 65% of its roof: fine
    cpu = Ceilings(device_name="cpu", device_kind="cpu", memory_bytes_per_s={"dram": Roof(50e9, "spec")},
                   compute_flops_per_s={"simt.fp32": Roof(1e12, "spec")})
    assert findings(real_profile("gpt2_fwd_eager", cpu), "gemm.alignment") == []


def test_misaligned_rows_are_left_to_the_alignment_rule():
    """The cutlass_75 kernels are legacy too, but the alignment is why they ran: one finding."""
    for name in ("gpt2_fwd_eager", "gpt2_train_eager", "resnet50_train_eager"):
        assert real_findings(name, "gemm.legacy-kernel") == []


def int8_launches(kernel: str, dur_us: float) -> list[Launch]:
    peer = Launch("aten::mm", [[8192, 4096], [4096, 4096]], "nvjet_sm90_tst_256x128_64x4_2x1_v_bz_coopA_TNN",
                  500.0)
    return [Launch("aten::_int_mm", [[8192, 4096], [4096, 4096]], kernel, dur_us, dtype="int8"), peer]


def test_int8_on_an_ampere_kernel_gets_fp8():
    """torch._int_mm on sm90 runs CUTLASS 2 sm80 kernels (pytorch issue 187094 shows the names)."""
    kernel = "void cutlass::Kernel2<cutlass_80_tensorop_i16832gemm_s8_256x128_64x3_tn_align16>(...)"
    ceilings = h200_ceilings()
    ceilings.compute_flops_per_s["tensor.int8"] = Roof(1979e12, "spec")  # H200 SXM dense int8
    data = traced_profile(int8_launches(kernel, 2200.0), ceilings)
    (f,) = findings(data, "gemm.legacy-kernel")
    row = data.kernels.iloc[f.rows[0]]
    assert row["op"] == "aten::_int_mm" and "sm_80" in f.evidence and "_scaled_mm" in f.recommendation
    # 2 x 8192 x 4096 x 4096 int8 ops at the 1979 TOP/s spec roof, against the typical 0.7 (no int8 peer)
    roof_s = 2 * 8192 * 4096 * 4096 / 1979e12
    assert f.numbers["efficiency"] == pytest.approx(roof_s / 2200e-6)
    assert f.est_saving_s == pytest.approx(2200e-6 * (1 - (roof_s / 2200e-6) / 0.7))


def test_bf16_on_an_ampere_kernel_gets_the_modern_path_unless_it_is_fast_or_the_gpu_is_ampere():
    slow = [Launch("aten::mm", [[8192, 4096], [4096, 4096]],
                   "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn", 1500.0),
            Launch("aten::mm", [[8192, 4096], [4096, 8192]], "nvjet_sm90_tst_256x128_64x4_2x1_v_bz_coopA_TNN", 800.0)]
    (f,) = findings(traced_profile(slow, H200), "gemm.legacy-kernel")
    assert "cublaslt" in f.recommendation and f.numbers["kernel_arch"] == 80
    fast = [Launch(**{**slow[0].__dict__, "dur_us": 400.0}), slow[1]]
    assert findings(traced_profile(fast, H200), "gemm.legacy-kernel") == []
    a100 = Ceilings(device_name="NVIDIA A100-SXM4-80GB", device_kind="cuda",
                    memory_bytes_per_s={"dram": Roof(2.0e12, "spec")},
                    compute_flops_per_s={"tensor.bf16": Roof(312e12, "spec")}, details={"device": {"sms": 108}})
    assert findings(traced_profile(slow, a100), "gemm.legacy-kernel") == []
