"""`advise --verify` without a GPU: what it rebuilds (shapes checked on the meta device, where ops
compute shapes only), how measured savings re-rank and demote findings, and its one-sentence
refusal on a machine without CUDA. The timing itself runs in test_verify_gpu.py."""

from __future__ import annotations

import json
import math
import time
from dataclasses import replace

import pytest
import torch
from advice_tables import h200_ceilings
from click.testing import CliRunner
from gpu_trace import Launch, traced_profile
from real_traces import real_profile

import rooflinectl
from rooflinectl import verify
from rooflinectl.analysis.advice import Verification, advise, with_verifications
from rooflinectl.cli.main import main as cli
from rooflinectl.outputs.advice_render import render_text
from rooflinectl.outputs.profile_file import save_profile
from rooflinectl.verify import plan, tensors
from rooflinectl.verify.registry import Trial

H200 = h200_ceilings()


@pytest.fixture
def on_meta(monkeypatch):
    """Rebuilt ops on the meta device: shapes and dtypes, no arithmetic."""
    monkeypatch.setattr(tensors, "DEVICE", "meta")


def trials_of(data, rule_id):
    report = advise(data)
    (n,) = [i for i, f in enumerate(report.findings) if f.rule_id == rule_id][:1]
    plans, skipped = plan(report, data)
    return report.findings[n], plans.get(n), skipped.get(n)


def shapes(result):
    return [tuple(t.shape) for t in result] if isinstance(result, list) else tuple(result.shape)


def test_padded_lm_head_is_rebuilt_with_the_profiled_and_the_padded_shapes(on_meta):
    data = real_profile("gpt2_train_eager", H200)
    finding, trials, _ = trials_of(data, "gemm.alignment")
    built = {}
    for trial in trials:
        original, fixed = trial.make()
        built[trial.label.split(" with ")[0]] = (shapes(original()), shapes(fixed()), original().dtype)
    assert built == {  # [M, N] out of the profiled [M, K] x [K, N], and with 50257 -> 50304
        "mm [2048, 768] x [768, 50257]": ((2048, 50257), (2048, 50304), torch.bfloat16),
        "mm [2048, 50257] x [50257, 768]": ((2048, 768), (2048, 768), torch.bfloat16),
        "mm [50257, 2048] x [2048, 768]": ((50257, 768), (50304, 768), torch.bfloat16),
    }
    assert sum(t.profiled_s for t in trials) == pytest.approx(data.kernels.loc[list(finding.rows), "time_s"].sum())


def test_naive_attention_is_rebuilt_as_sdpa_of_the_same_q_k_v(on_meta):
    def naive(q, k, v):
        return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1) @ v

    q, k, v = (torch.randn(2, 4, 128, 32) for _ in range(3))
    data = rooflinectl.profile(naive, q, k, v, warmup=1, iters=2).data
    (trial,) = trials_of(data, "attention.materialised-scores")[1]
    original, fixed = trial.make()
    assert shapes(original()) == shapes(fixed()) == (2, 4, 128, 32)


def test_a_loop_of_matmuls_is_rebuilt_as_one_bmm(on_meta):
    gelu = Launch("aten::gelu", [[256, 128]], "vectorized_elementwise_kernel<gelu>", 2.0)
    small = Launch("aten::mm", [[256, 128], [128, 64]], "nvjet_sm90_tst_64x64_64x13_1x2_h_bz_NNT", 5.0)
    data = traced_profile(([gelu] + [small] * 16) * 3, H200)
    finding, (trial,), _ = trials_of(data, "gemm.batch-small")
    original, fixed = trial.make()
    assert shapes(original()) == [(256, 64)] * 16 and shapes(fixed()) == (16, 256, 64)
    # one call is one run: 3 runs, each spanning 16 x 5 us + 15 gaps of 10 us (tests/gpu_trace.py)
    assert trial.runs == 3 and trial.profiled_s == pytest.approx(3 * 230e-6)


def test_a_loop_of_linear_layers_is_rebuilt_as_one_baddbmm(on_meta):
    gelu = Launch("aten::gelu", [[256, 128]], "vectorized_elementwise_kernel<gelu>", 2.0)
    linear = Launch("aten::addmm", [[64], [256, 128], [128, 64]], "nvjet_sm90_tst_64x64_64x13_1x2_h_bz_bias_TNT", 5.0)
    data = traced_profile(([gelu] + [linear] * 8) * 2, H200)
    _, (trial,), _ = trials_of(data, "gemm.batch-small")
    original, fixed = trial.make()
    assert shapes(original()) == [(256, 64)] * 8 and shapes(fixed()) == (8, 256, 64)


def test_a_loops_measured_difference_counts_once_per_run_and_a_kernels_speed_up_on_profiled_time(monkeypatch):
    """A fake timer: the loop of a run measured 1.2 ms and its bmm 20 us; the profile saw 3 runs:
    3 x 1.18 ms saved (the kernels' 80 us speed-up ratio would have said 0.68 ms). A padded GEMM
    measured 2 ms and 1 ms, on 1 ms of profiled time: half of it, 0.5 ms."""
    timed = {"loop": (1.2e-3, 20e-6), "gemm": (2e-3, 1e-3)}
    monkeypatch.setattr(verify, "_time_trial", lambda trial, _slice_s, _budget=None: timed[trial.label])
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda: (80 << 30, 80 << 30))
    loop = Trial("loop", lambda: (None, None), profiled_s=690e-6, bytes_needed=1, runs=3.0)
    gemm = Trial("gemm", lambda: (None, None), profiled_s=1e-3, bytes_needed=1)
    budget = verify._Budget(time.perf_counter() + 10.0, 2)
    looped = verify._verify_one([loop], budget)
    assert looped.status == "gain" and looped.measured_saving_s == pytest.approx(3 * (1.2e-3 - 20e-6))
    assert "per run, applied to 3 runs" in looped.detail
    padded = verify._verify_one([gemm], budget)
    assert padded.measured_saving_s == pytest.approx(0.5e-3) and "per call" in padded.detail


def test_int8_is_rebuilt_against_fp8(on_meta):
    ceilings = h200_ceilings()
    ceilings.compute_flops_per_s["tensor.int8"] = ceilings.compute_flops_per_s["tensor.fp8"]
    kernel = "void cutlass::Kernel2<cutlass_80_tensorop_i16832gemm_s8_256x128_64x3_tn_align16>(...)"
    data = traced_profile([Launch("aten::_int_mm", [[4096, 1024], [1024, 2048]], kernel, 900.0, dtype="int8")],
                          ceilings)
    (trial,) = trials_of(data, "gemm.legacy-kernel")[1]
    original, fixed = trial.make()
    assert (original().dtype, fixed().dtype) == (torch.int32, torch.bfloat16)
    assert shapes(original()) == shapes(fixed()) == (4096, 2048)


def test_fp32_matmul_is_rebuilt_with_tf32_switched_on_only_for_the_fix(on_meta):
    gemm = Launch("aten::mm", [[4096, 4096], [4096, 4096]], "sm90_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8",
                  3000.0, dtype="fp32")
    (trial,) = trials_of(traced_profile([gemm], H200), "precision.fp32-matmul")[1]
    original, fixed = trial.make()
    seen = []
    matmul_flags = torch.backends.cuda.matmul
    before = matmul_flags.allow_tf32
    for call in (original, fixed):
        torch.backends.cuda.matmul.allow_tf32 = not before  # the calls set their own and restore it
        seen.append((shapes(call()), matmul_flags.allow_tf32 == (not before)))
    torch.backends.cuda.matmul.allow_tf32 = before
    assert seen == [((4096, 4096), True), ((4096, 4096), True)]


def test_measured_savings_rank_findings_and_a_fix_without_gain_is_demoted():
    """Three findings ranked by estimate 30, 20, 10 ms; --verify measures 5 ms on the first (still
    a gain), 25 ms on the second, no gain on the third: the order becomes second, first, third."""
    data = real_profile("gpt2_fwd_eager", H200)
    base = advise(data).findings[0]
    findings = [replace(base, rule_id=r, est_saving_s=s, severity="warning", subject=r)
                for r, s in (("gemm.alignment", 0.030), ("precision.fp32-matmul", 0.020), ("gemm.batch-small", 0.010))]
    report = replace(advise(data), findings=findings)
    verified = with_verifications(report, {
        0: Verification("gain", "a", measured_saving_s=0.005, original_s=2e-3, fixed_s=1e-3),
        1: Verification("gain", "b", measured_saving_s=0.025, original_s=2e-3, fixed_s=1e-3),
        2: Verification("no-gain", "1.00x", measured_saving_s=-0.0001, original_s=1e-3, fixed_s=1.0001e-3)})
    assert [f.rule_id for f in verified.findings] == ["precision.fp32-matmul", "gemm.alignment", "gemm.batch-small"]
    demoted = verified.findings[2]
    assert demoted.severity == "info" and demoted.evidence.endswith("Verified on this GPU: no gain (1.00x).")
    assert [f.severity for f in verified.findings[:2]] == ["warning", "warning"]
    markdown = render_text(verified, "markdown")
    assert "| est. saving | measured | share |" in markdown and "25.00 ms" in markdown
    # a fix measured slower saves nothing: it is listed with the notes, after the actions, and says so
    assert markdown.index("**Notes (no saving):**") < markdown.index("`gemm.batch-small`") and "no gain" in markdown
    as_json = json.loads(render_text(verified, "json"))
    assert as_json["findings"][0]["verification"]["measured_saving_s"] == 0.025
    not_run = with_verifications(report, {0: Verification("not-run", "no stride or padding")})
    assert [f.rule_id for f in not_run.findings][0] == "gemm.alignment"  # ranked by its estimate still


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the machine without a GPU")
def test_verify_without_a_gpu_is_one_sentence_and_exit_3(tmp_path):
    path = tmp_path / "gpu.profile.json"
    save_profile(real_profile("gpt2_fwd_eager", H200), path)
    result = CliRunner().invoke(cli, ["advise", str(path), "--verify"])
    assert result.exit_code == 3, result.output
    assert result.output.strip().count("\n") == 0  # one sentence
    assert "--verify times the fixes on a GPU, and this machine has none" in result.output


def test_verify_on_a_cpu_profile_is_a_usage_error(tmp_path):
    path = tmp_path / "cpu.profile.json"
    x = torch.randn(64, 64)
    rooflinectl.profile(torch.mm, x, x, warmup=1, iters=1).save(str(path))
    result = CliRunner().invoke(cli, ["advise", str(path), "--verify"])
    assert result.exit_code == 2 and "recorded on a CPU" in result.output
