"""Advice on real profiles: captured here on CPU through the Python API, rebuilt from the raw
H200 captures under tests/data/ by today's pipeline, and the recorded H200 advice examples."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

import rooflinectl
from rooflinectl.analysis.advice import advise
from rooflinectl.analysis.roofline import place_on_roofline
from rooflinectl.capture.run.session import load_capture
from rooflinectl.ceilings.model import Ceilings, Roof
from rooflinectl.outputs.profile_file import load_profile
from rooflinectl.pipeline import profile_data

DATA = Path(__file__).parent / "data"


def naive_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    return torch.softmax(scores, dim=-1) @ v


def bias_gelu_residual(x: torch.Tensor, bias: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.gelu(x + bias) + residual


def rule_ids(report) -> list[str]:
    return [f.rule_id for f in report.findings]


def test_cpu_naive_attention_is_found():
    q, k, v = (torch.randn(2, 4, 128, 32) for _ in range(3))
    report = advise(rooflinectl.profile(naive_attention, q, k, v, warmup=1, iters=3).data)
    assert "attention.materialised-scores" in rule_ids(report)
    fixed = advise(rooflinectl.profile(torch.nn.functional.scaled_dot_product_attention, q, k, v,
                                       warmup=1, iters=3).data)
    assert "attention.materialised-scores" not in rule_ids(fixed)


def test_cpu_gelu_chain_is_found():
    # 16 MiB tensors: larger than the CPU's caches, so no kernel of the chain beats the DRAM roof
    # (cache-resident data shows above its roof and is rightly left out of a chain).
    x, r = torch.randn(2048, 2048), torch.randn(2048, 2048)
    report = advise(rooflinectl.profile(bias_gelu_residual, x, torch.randn(2048), r, warmup=1, iters=3).data)
    (chain,) = report.findings_of("fusion.memory-chain")
    assert chain.subject.startswith("add+gelu+add")
    assert 0 < chain.est_saving_s < report.run_time_s


H200_SPEC = Ceilings(  # H200 SXM dense spec roofs: a fixed yardstick, independent of any cache
    device_name="NVIDIA H200", device_kind="cuda",
    memory_bytes_per_s={"dram": Roof(4.8e12, "spec")},
    compute_flops_per_s={"tensor.bf16": Roof(989e12, "spec"), "tensor.tf32": Roof(494e12, "spec"),
                         "simt.fp32": Roof(67e12, "spec")},
    kernel_floor_s=Roof(2e-6, "estimate"),
)
TRACES = ("h200_mlp_bf16", "h200_attention_naive_bf16")


def rebuilt(name: str):
    """A profile rebuilt from a raw H200 capture (tests/data) by today's pipeline."""
    capture = load_capture(str(DATA / f"{name}.capture.json.gz"))
    return profile_data(capture, command=["test"], completed=True, exit_code=0, ceilings=H200_SPEC)


@pytest.mark.parametrize("name", TRACES)
def test_advice_on_rebuilt_traces_never_promises_more_than_the_time_it_touches(name):
    data = rebuilt(name)
    report = advise(data)
    idle_s = data.summary["device_idle_s"]
    assert report.run_time_s == pytest.approx(data.summary["window_s"])
    assert 0 <= report.total_saving_s <= report.run_time_s
    for f in report.findings:
        rows_s = float(data.kernels.loc[list(f.rows), "time_s"].sum())
        assert 0 <= f.est_saving_s <= rows_s + min(f.idle_saving_s, idle_s) + 1e-12, f.rule_id


def test_naive_attention_trace_gets_sdpa_with_a_saving_in_range():
    """B=8, H=16, S=2048, D=64, bf16, 3 iterations: softmax over [8, 16, 2048, 2048] scores."""
    data = rebuilt("h200_attention_naive_bf16")
    (finding,) = advise(data).findings_of("attention.materialised-scores")
    k = data.kernels
    elements = 8 * 16 * 2048 * 2048
    assert finding.numbers["score_elements"] == elements
    assert finding.numbers["score_bytes"] == elements * 2 * 3  # bf16, 3 iterations
    softmax_s = float(k.loc[k["op"] == "aten::_softmax", "time_s"].sum())
    bmm_s = float(k.loc[k["op"] == "aten::bmm", "time_s"].sum())
    scores_pass_s = float(k.loc[(k["op_family"] == "elementwise") & k["shapes"].str.contains("2048, 2048"), "time_s"].sum())
    # SDPA saves at least the softmax pass, and at most everything that touches the score matrix;
    # the GEMMs' part is their write and read of the scores at the DRAM roof: 2 x 3.22 GB / 4.8 TB/s
    assert softmax_s + scores_pass_s < finding.est_saving_s <= softmax_s + scores_pass_s + bmm_s
    assert finding.numbers["gemm_score_traffic_s"] == pytest.approx(min(2 * elements * 2 * 3 / 4.8e12, bmm_s))
    assert set(k.loc[list(finding.rows), "op"]) >= {"aten::_softmax", "aten::bmm"}


def recorded(path: Path):
    """A recorded profile whose rows today's analysis places again: only its measured times and
    attributed costs come from the file, nothing the advice or roofline code derived then."""
    data = load_profile(path)
    measured = data.kernels[[c for c in data.kernels.columns if c in MEASURED_COLUMNS]]
    data.kernels = place_on_roofline(measured, data.ceilings)
    return data


MEASURED_COLUMNS = ("kernel", "op", "op_family", "module", "shapes", "dtype", "device", "origin", "calls", "time_s",
                    "flops", "bytes", "precision", "unit", "cost_source", "cost_note", "blocks",
                    "threads_per_block", "rank")
EXPECTED = {  # example -> the rule its H200 before-profile must show and its after-profile must not
    "fp32_mlp": "precision.fp32-matmul",
    "gelu_chain": "fusion.memory-chain",
    "tiny_batch_loop": "launch.overhead",
    "attention_advice": "attention.materialised-scores",
}


@pytest.mark.parametrize("example", sorted(EXPECTED))
def test_h200_examples_show_their_finding_and_the_fix_removes_it(example):
    """Profiles recorded on the H200 by scripts/gpu.d/50-advice.sh (tests/data/advice/): each
    example is written to trigger one rule, and its --fixed variant applies the fix."""
    before = recorded(DATA / "advice" / f"h200_{example}.before.profile.json")
    after = recorded(DATA / "advice" / f"h200_{example}.after.profile.json")
    assert EXPECTED[example] in rule_ids(advise(before))
    assert EXPECTED[example] not in rule_ids(advise(after))
    (finding,) = advise(before).findings_of(EXPECTED[example])[:1]
    touched_s = float(before.kernels.loc[list(finding.rows), "time_s"].sum()) + finding.idle_saving_s
    assert 0 < finding.est_saving_s <= touched_s
