"""Convolutions in the kernel table and in `advise --verify`, without a GPU: the reader keeps a
convolution's arguments from a real trace's Concrete Inputs, the kernel table carries them
(op_args), the rebuilt convolution is the profiled one (its output shape and FLOPs against hand
formulas), and a profile without them says why it is not verified. The timing runs in
test_verify_conv_gpu.py."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import torch
import torch.nn.functional as F
from advice_tables import h200_ceilings
from real_traces import real_profile
from torch.utils.flop_counter import FlopCounterMode

import rooflinectl
from rooflinectl.analysis.advice import advise
from rooflinectl.capture.read.trace import read_chrome_trace
from rooflinectl.outputs.profile_file import load_profile, save_profile
from rooflinectl.verify import plan, rebuild_conv, tensors
from rooflinectl.verify.registry import NotRebuilt

H200 = h200_ceilings()
STEM = ("aten::cudnn_convolution", "aten::convolution_backward")  # resnet50's stem conv, C_in 3


@pytest.fixture
def on_meta(monkeypatch):
    monkeypatch.setattr(tensors, "DEVICE", "meta")


@pytest.fixture
def on_cpu(monkeypatch):
    monkeypatch.setattr(tensors, "DEVICE", "cpu")


def flops_of(call) -> int:
    with FlopCounterMode(display=False) as counter:
        call()
    return counter.get_total_flops()


def test_the_reader_keeps_a_convolutions_arguments_from_a_real_trace(tmp_path):
    """torch.profiler's own trace of a strided, padded, dilated conv: the op's recorded arguments
    are the module's."""
    conv = torch.nn.Conv2d(4, 6, 3, stride=(2, 3), padding=(1, 2), dilation=(2, 1))
    with torch.profiler.profile(record_shapes=True) as prof:
        conv(torch.randn(2, 4, 17, 19))
    prof.export_chrome_trace(str(tmp_path / "conv.json"))
    (op,) = [o for o in read_chrome_trace(tmp_path / "conv.json").ops if o.name == "aten::convolution"]
    assert op.concrete_inputs[3:9] == ["[2, 3]", "[1, 2]", "[2, 1]", "False", "[0, 0]", "1"]


def test_the_kernel_table_keeps_a_convolutions_arguments_by_name(on_cpu):
    """Profiled through the pipeline on the CPU (aten::convolution's row): op_args by name, the
    channels_last layout seen in the strides, and the rebuilt call's output equal to the module's
    (shape (2, 6, 8, 7): (17 + 2*1 - 2*2 - 1) // 2 + 1 and (19 + 2*2 - 2 - 1) // 3 + 1)."""
    conv = torch.nn.Conv2d(4, 6, 3, stride=(2, 3), padding=(1, 2), dilation=(2, 1)).to(memory_format=torch.channels_last)
    x = torch.randn(2, 4, 17, 19).contiguous(memory_format=torch.channels_last)
    data = rooflinectl.profile(conv, x, warmup=1, iters=2, device="cpu").data
    row = data.kernels[data.kernels["op_family"] == "conv"].iloc[0]
    assert json.loads(row["op_args"]) == {
        "stride": [2, 3], "padding": [1, 2], "dilation": [2, 1], "output_padding": [0, 0], "transposed": False,
        "groups": 1, "memory_format": "channels_last"}
    case = rebuild_conv.conv_case(row)
    out = rebuild_conv.conv_call(case, torch.float32, tf32=False)()
    assert out.shape == conv(x).shape == (2, 6, 8, 7) == case.out_shape()
    assert out.is_contiguous(memory_format=torch.channels_last)
    assert not data.kernels.loc[data.kernels["op_family"] != "conv", "op_args"].astype(bool).any()  # other ops: ''


def test_cudnns_argument_order_is_read_by_name():
    """aten::cudnn_convolution records (self, weight, padding, stride, ...): the H200 trace's stem
    conv has padding [3, 3] before stride [2, 2] (aten::convolution above it says stride [2, 2])."""
    data = real_profile("resnet50_train_eager", H200, STEM)
    forward = data.kernels[(data.kernels["op"] == "aten::cudnn_convolution")
                           & data.kernels["shapes"].str.startswith("[32, 3, 224, 224]")]
    args = {json.loads(a)["stride"][0]: json.loads(a) for a in forward["op_args"]}
    assert args[2]["padding"] == [3, 3] and args[2]["memory_format"] == "channels_last"
    backward = data.kernels[data.kernels["op"] == "aten::convolution_backward"].iloc[0]
    assert {"output_mask", "bias_sizes"} <= set(json.loads(backward["op_args"]))


def test_the_stem_convs_alignment_is_rebuilt_forward_and_backward_with_the_channels_padded(on_meta):
    """ResNet-50's stem on the H200 (bf16, channels_last): one trial per convolution (its kernels'
    rows together); the rebuilt forward's output and FLOPs are the hand formulas', 3 -> 8 channels
    multiply the FLOPs by 8/3, and the weight gradient the backward asked for is padded too."""
    data = real_profile("resnet50_train_eager", H200, STEM)
    report = advise(data)
    n = next(i for i, f in enumerate(report.findings) if f.rule_id == "gemm.alignment")
    plans, skipped = plan(report, data)
    assert n not in skipped, skipped.get(n)
    forward, backward = plans[n]
    assert "C_in 3 -> 8" in forward.label and "stride [2, 2] padding [3, 3] channels_last" in forward.label
    rows = data.kernels.loc[list(report.findings[n].rows)]
    assert forward.profiled_s + backward.profiled_s == pytest.approx(rows["time_s"].sum())
    original, fixed = forward.make()
    out = (32, 64, (224 + 2 * 3 - 7) // 2 + 1, (224 + 2 * 3 - 7) // 2 + 1)
    assert tuple(original().shape) == tuple(fixed().shape) == out and original().dtype == torch.bfloat16
    hand = 2 * 32 * 64 * 112 * 112 * 3 * 7 * 7
    assert flops_of(original) == hand and flops_of(fixed) == hand * 8 // 3
    grads = [None if g is None else tuple(g.shape) for g in backward.make()[1]()]
    assert grads == [None, (64, 8, 7, 7), None]  # output_mask [False, True, False]: the weight's only


def test_a_profile_without_op_args_is_not_verified_and_says_why(tmp_path):
    """A profile written before op_args was kept: it loads, and the conv finding says what is missing."""
    data = real_profile("resnet50_train_eager", H200, STEM)
    data.kernels = data.kernels.drop(columns="op_args")
    path = tmp_path / "old.profile.json"
    save_profile(data, path)
    old = load_profile(path)
    assert (old.kernels["op_args"] == "").all()
    report = advise(old)
    n = next(i for i, f in enumerate(report.findings) if f.rule_id == "gemm.alignment")
    plans, skipped = plan(report, old)
    assert n not in plans and skipped[n].status == "not-run"
    assert skipped[n].detail == rebuild_conv.NO_ARGS and "stride or padding" in skipped[n].detail


def test_a_tf32_fix_of_an_fp32_convolution_switches_cudnn_only_for_the_fix(on_cpu):
    row = pd.Series({"op": "aten::convolution", "shapes": "[1, 2, 5, 5] x [3, 2, 3, 3]", "dtype": "fp32",
                     "precision": "fp32", "time_s": 1e-3,
                     "op_args": json.dumps({"stride": [1, 1], "padding": [1, 1], "dilation": [1, 1],
                                            "output_padding": [0, 0], "transposed": False, "groups": 1,
                                            "memory_format": "contiguous"})})
    (trial,) = rebuild_conv.tf32_convs([row, row.copy()])  # two rows of one convolution: one trial
    assert trial.profiled_s == pytest.approx(2e-3)
    original, fixed = trial.make()
    seen = []
    before = torch.backends.cudnn.allow_tf32
    spy = lambda *a, **k: seen.append(torch.backends.cudnn.allow_tf32) or F.conv2d(*a[:3], 1, 1)  # noqa: E731
    with pytest.MonkeyPatch.context() as m:
        m.setattr(torch.ops.aten, "convolution", spy)
        original(), fixed()
    assert seen == [False, True] and torch.backends.cudnn.allow_tf32 == before


def test_what_cannot_be_rebuilt_says_so():
    bad = pd.Series({"op": "aten::convolution", "shapes": "[1, 2, 5, 5]", "op_args": "{}"})
    with pytest.raises(NotRebuilt, match="cannot read the input and weight"):
        rebuild_conv.conv_case(bad)
    grouped = rebuild_conv.ConvCase("aten::convolution", (1, 4, 5, 5), (4, 2, 3, 3),
                                    {"transposed": False, "groups": 2})
    with pytest.raises(NotRebuilt, match="transposed or grouped"):
        rebuild_conv.padded_case(grouped, {"C_in": 8})
