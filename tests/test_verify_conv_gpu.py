"""`advise --verify` of convolutions on the GPU: profiled through the API, rebuilt from the
kernel table's shapes and op_args, and timed. What the timing cannot fake is checked: the finding
is measured (not "not-run"), both versions ran, the rebuilt convolution's arguments are the
profiled ones, a fix known to be much faster (TF32 against fp32 CUDA cores) measures a gain, and
a measured saving never exceeds the time it stands for."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import torch

import rooflinectl
from rooflinectl.analysis.advice import advise
from rooflinectl.analysis.advice.registry import make_finding
from rooflinectl.verify import verify_report

pytestmark = pytest.mark.gpu


def profiled(fn, *args):
    return rooflinectl.profile(fn, *args, warmup=2, iters=3).data


def conv_rows(data) -> list[int]:
    return [i for i, family in enumerate(data.kernels["op_family"]) if family == "conv"]


def check_measured(data, f) -> None:
    v = f.verification
    assert v is not None and v.status in ("gain", "no-gain"), (f.subject, v)
    assert v.original_s > 0 and v.fixed_s > 0
    if v.status == "gain":
        assert 0 < v.measured_saving_s <= data.kernels.loc[list(f.rows), "time_s"].sum() * 1.0001


def test_a_resnet_stem_convs_alignment_finding_is_measured_with_its_channels_padded():
    """ResNet-50's stem (bf16, channels_last, 3 -> 64 channels, 7x7, stride 2, padding 3): the H200
    trace shows it at 7% of its roof, so gemm.alignment fires; --verify rebuilds it from op_args."""
    conv = torch.nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False).cuda().to(torch.bfloat16)
    conv = conv.to(memory_format=torch.channels_last)
    x = torch.randn(32, 3, 224, 224, device="cuda", dtype=torch.bfloat16).contiguous(memory_format=torch.channels_last)
    data = profiled(conv, x)
    args = {json.dumps(json.loads(a), sort_keys=True) for a in data.kernels["op_args"] if a}
    assert any('"padding": [3, 3]' in a and '"stride": [2, 2]' in a and "channels_last" in a for a in args), args
    report = verify_report(advise(data), data, budget_s=4.0)
    (f,) = [f for f in report.findings if f.rule_id == "gemm.alignment"]
    assert "C_in 3 -> 8" in f.verification.detail and "stride [2, 2] padding [3, 3]" in f.verification.detail
    check_measured(data, f)


def test_a_vit_patch_embeddings_conv_is_rebuilt_and_timed():
    """ViT-B/16's patch embedding (3 -> 768 channels, 16x16, stride 16, bf16): the finding of the
    H200 runs that said "not-run" (no stride or padding kept). The finding is made here on the conv's
    rows (whether the rule fires in isolation depends on the peers' efficiency; its rebuild does not)."""
    conv = torch.nn.Conv2d(3, 768, 16, stride=16).cuda().to(torch.bfloat16)
    data = profiled(conv, torch.randn(32, 3, 224, 224, device="cuda", dtype=torch.bfloat16))
    rows = conv_rows(data)
    assert rows, data.kernels[["kernel", "op", "op_family"]]
    finding = make_finding("gemm.alignment", evidence="the patch embedding's C_in 3", recommendation="pad",
                           est_saving_s=float(data.kernels.loc[rows, "time_s"].sum()) / 2, rows=tuple(rows),
                           subject="conv 3 -> 8")
    report = verify_report(replace(advise(data), findings=[finding]), data, budget_s=4.0)
    (f,) = report.findings
    assert "stride [16, 16] padding [0, 0]" in f.verification.detail, f.verification
    check_measured(data, f)


def test_an_fp32_convolution_without_tf32_is_measured_faster_with_it():
    """A 1x1 convolution (an implicit GEMM: cuDNN has no Winograd path for it, which would do fewer
    FLOPs than the direct count and put the kernel above its fp32 roof), 512 channels, fp32 with
    cuDNN's TF32 off while profiled: compute-bound on CUDA cores, several times faster with TF32."""
    before = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False
    try:
        conv = torch.nn.Conv2d(512, 512, 1).cuda()
        data = profiled(conv, torch.randn(32, 512, 28, 28, device="cuda"))
    finally:
        torch.backends.cudnn.allow_tf32 = before
    report = verify_report(advise(data), data, budget_s=4.0)
    (f,) = [f for f in report.findings if f.rule_id == "precision.fp32-matmul"]
    assert f.verification is not None and f.verification.status == "gain", (f.evidence, f.verification)
    assert "fp32 with TF32" in f.verification.detail
    check_measured(data, f)
    assert torch.backends.cudnn.allow_tf32 == before  # the rebuild restores the switch
