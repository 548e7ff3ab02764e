"""The rebuilders of issue 30's fixes, without a GPU: what each builds from a finding (ops, shapes,
dtypes, the profiled time it stands for), run on the CPU or the meta device; the timing runs in
test_verify_fixes_gpu.py. torch.compile is replaced by a recorder here (compiling on this CPU
takes too long for a unit test): the chain's eager and "compiled" versions must agree."""

from __future__ import annotations

import pandas as pd
import pytest
import torch
from advice_tables import h200_ceilings
from gpu_trace import Launch, traced_profile

import rooflinectl
from rooflinectl.analysis.advice import advise
from rooflinectl.analysis.advice.registry import make_finding
from rooflinectl.verify import plan, rebuild_launches, rebuild_ops, tensors
from rooflinectl.verify.registry import NotRebuilt

H200 = h200_ceilings()


@pytest.fixture
def on_cpu(monkeypatch):
    monkeypatch.setattr(tensors, "DEVICE", "cpu")


@pytest.fixture
def compiled(monkeypatch):
    """torch.compile recorded, not run: the function is returned as it is."""
    seen = []

    def fake(fn, **options):
        seen.append(options)
        return fn

    monkeypatch.setattr(torch, "compile", fake)
    return seen


def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1.0 + torch.tanh(0.79788456 * (x + 0.044715 * torch.pow(x, 3.0))))


class Blocks(torch.nn.Module):
    def __init__(self, n: int) -> None:
        super().__init__()
        self.h = torch.nn.ModuleList(torch.nn.Identity() for _ in range(n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.h:
            x = gelu_tanh(block(x))
        return x


def test_a_fusion_chain_is_rebuilt_eager_and_compiled_on_the_profiled_shape(on_cpu, compiled):
    data = rooflinectl.profile(gelu_tanh, torch.randn(1024, 2048), warmup=1, iters=2).data
    report = advise(data)
    n, finding = next((i, f) for i, f in enumerate(report.findings) if f.rule_id == "fusion.memory-chain")
    plans, skipped = plan(report, data)
    assert n not in skipped, skipped
    (trial,) = plans[n]
    eager, fixed = trial.make()
    assert compiled == [{"dynamic": False}]  # the fix is the same function under torch.compile
    out = eager()
    assert out.shape == (1024, 2048) and out.dtype == torch.float32
    assert torch.equal(out, fixed())
    ops = finding.evidence.split(": ", 1)[1].split(";")[0].split(" -> ")
    assert sorted(trial.label.split(" on ")[0].split("+")) == sorted(o.split("::")[1] for o in ops)
    rows_s = data.kernels.loc[list(finding.rows), "time_s"].sum()
    assert 0 < trial.profiled_s <= rows_s * (1 + 1e-9)


def test_each_op_is_rebuilt_from_its_name_and_shapes(on_cpu):
    def row(op: str, shapes: str) -> pd.Series:
        return pd.Series({"op": op, "shapes": shapes, "dtype": "fp32"})

    x = torch.randn(4, 8)
    cases = {
        ("aten::mul", "[4, 8] x []"): x * 0.5,
        ("aten::add_", "[4, 8] x [4, 8]"): None,  # in place: costs what add does
        ("aten::native_layer_norm", "[4, 8] x [8] x [8]"): None,
        ("aten::_softmax", "[4, 8]"): torch.softmax(x, -1),
        ("aten::pow", "[4, 8]"): x ** 3,
    }
    for (op, shapes), expected in cases.items():
        step = rebuild_ops.step_of(row(op, shapes))
        extra = step.operands(torch.float32)
        out = step.fn(x, *extra)
        assert out.shape == (4, 8), op
        if expected is not None:
            assert torch.allclose(out, expected), op
    with pytest.raises(NotRebuilt, match="no rebuild for aten::cumsum"):
        rebuild_ops.step_of(row("aten::cumsum", "[4, 8]"))


def test_a_cat_is_rebuilt_along_the_dimension_its_tensors_differ_in(on_cpu):
    """GPT-2's KV cache: cat([empty [0], k [4, 12, 512, 64]], -2) (the first call) copies k; a cat of
    two cached blocks joins them where their shapes differ."""
    def step(shapes: str):
        return rebuild_ops.step_of(pd.Series({"op": "aten::cat", "shapes": shapes, "dtype": "fp32"}))

    first = step("[0] x [4, 12, 8, 64] x []")
    k = torch.randn(4, 12, 8, 64)
    assert torch.equal(first.fn(k, *first.operands(torch.float32)), k)
    joined = step("[4, 12, 8, 64] x [4, 12, 3, 64] x []")
    out = joined.fn(k, *joined.operands(torch.float32))
    assert out.shape == (4, 12, 11, 64) and torch.equal(out[:, :, :8], k)
    values = rebuild_ops.step_of(pd.Series({"op": "aten::sort", "shapes": "[4, 8]", "dtype": "fp32"})).fn(k)
    assert torch.equal(values, torch.sort(k, -1)[0])


def test_bf16_storage_is_rebuilt_as_the_same_ops_in_fp32_and_bf16(on_cpu):
    kernels = pd.DataFrame({"op": ["aten::mul", "aten::cumsum", "aten::_softmax"],
                            "shapes": ["[512, 512] x [512, 512]", "[512, 512]", "[512, 512]"],
                            "dtype": ["fp32"] * 3, "time_s": [3e-3, 2e-3, 1e-3]})
    finding = make_finding("precision.bf16-storage", evidence="e", recommendation="r", est_saving_s=3e-3,
                           rows=(0, 1, 2))
    trials = rebuild_ops.bf16_ops(finding, kernels)
    assert [t.profiled_s for t in trials] == [3e-3, 1e-3]  # cumsum has no rebuild: left out, said by its time
    for trial in trials:
        fp32, bf16 = trial.make()
        assert (fp32().dtype, bf16().dtype) == (torch.float32, torch.bfloat16)
        assert fp32().shape == bf16().shape == (512, 512)


def test_moe_expert_gemms_are_rebuilt_as_a_loop_and_one_grouped_mm(monkeypatch):
    monkeypatch.setattr(tensors, "DEVICE", "meta")
    kernel = "nvjet_sm90_tst_64x64_64x13_1x2_h_bz_NNT"
    counts = [512, 256, 128, 64, 64, 32, 32, 16]  # tokens per expert: two pairs share a row
    launches = [Launch("aten::mm", [[m, 1024], [1024, 2048]], kernel, 20.0) for m in counts] * 3
    data = traced_profile(launches, H200)
    report = advise(data)
    n = next(i for i, f in enumerate(report.findings) if f.rule_id == "moe.grouped-gemm")
    (trial,) = plan(report, data)[0][n]
    assert trial.runs == 3  # three runs of the loop: the gcd of the rows' calls (3 and 6)
    loop, grouped = trial.make()
    assert sorted(tuple(t.shape) for t in loop()) == sorted((m, 2048) for m in counts)
    assert tuple(grouped().shape) == (sum(counts), 2048)
    assert "8 expert GEMMs" in trial.label


def test_launch_overhead_is_replayed_only_in_function_mode(tmp_path, monkeypatch):
    target = tmp_path / "step.py"
    target.write_text("def step(x):\n    return x + 1\n")
    monkeypatch.chdir(tmp_path)
    assert rebuild_launches.function_target({"command": ["rooflinectl", "profile", "step.py:step"]}) == \
        (target.relative_to(tmp_path), "step")
    for command, reason in ((["rooflinectl", "profile", "train.py", "--", "--steps", "3"], "only function mode"),
                            (["rooflinectl.profile(step)"], "only function mode"),
                            (["rooflinectl", "profile", "gone.py:step"], "is not here")):
        with pytest.raises(NotRebuilt, match=reason):
            rebuild_launches.function_target({"command": command})


def test_a_launch_overhead_finding_of_a_script_says_why_it_is_not_rebuilt():
    finding = make_finding("launch.overhead", evidence="e", recommendation="r", est_saving_s=1e-3,
                           numbers={"window_s": 0.01})
    kernels = pd.DataFrame({"op": ["aten::add"], "time_s": [1e-3]})
    kernels.attrs.update(metadata={"command": ["rooflinectl", "profile", "train.py"]}, summary={"iterations": 5})
    with pytest.raises(NotRebuilt, match="a script's step cannot be called apart"):
        rebuild_launches.cuda_graph(finding, kernels)


def test_an_action_without_a_rebuild_says_why_and_a_note_is_left_alone():
    from dataclasses import replace

    data = traced_profile([Launch("aten::mm", [[4096, 4096], [4096, 4096]], "nvjet_sm90_tst_64x64", 900.0)], H200)
    report = advise(data)
    grid = make_finding("grid.small", evidence="e", recommendation="r", est_saving_s=1e-4, rows=(0,))
    stop = make_finding("roof.stop-here", evidence="e", recommendation="r", est_saving_s=0.0, rows=(0,))
    plans, skipped = plan(replace(report, findings=[grid, stop]), data)
    assert not plans and list(skipped) == [0]
    assert skipped[0].status == "not-run" and "different kernel" in skipped[0].detail
