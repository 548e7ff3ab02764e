"""Advice on real profiles: captured here on CPU through the Python API, and the recorded
H200 profiles under tests/data/ when they exist."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

import rooflinectl
from rooflinectl.analysis.advice import advise, exit_code
from rooflinectl.outputs.profile_file import load_profile

DATA = Path(__file__).parent / "data"
RECORDED = sorted(DATA.glob("*.profile.json"))


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
    x, r = torch.randn(512, 256), torch.randn(512, 256)
    report = advise(rooflinectl.profile(bias_gelu_residual, x, torch.randn(256), r, warmup=1, iters=3).data)
    (chain,) = report.findings_of("fusion.memory-chain")
    assert chain.subject.startswith("add+gelu+add")
    assert 0 < chain.est_saving_s < report.run_time_s


@pytest.mark.parametrize("path", RECORDED, ids=[p.name for p in RECORDED])
def test_recorded_profiles_give_stable_capped_advice(path):
    data = load_profile(path)
    first, second = advise(data), advise(load_profile(path))
    assert [f.to_dict() for f in first.findings] == [f.to_dict() for f in second.findings]
    assert exit_code(first, "warning") == exit_code(second, "warning")
    assert 0 <= first.total_saving_s <= first.run_time_s
    for f in first.findings:
        rows_s = float(data.kernels.loc[list(f.rows), "time_s"].sum()) if f.rows else 0.0
        assert f.est_saving_s <= rows_s + f.idle_saving_s + 1e-12


EXPECTED = {  # example -> the rule its H200 before-profile must show and its after-profile must not
    "fp32_mlp": "precision.fp32-matmul",
    "gelu_chain": "fusion.memory-chain",
    "tiny_batch_loop": "launch.overhead",
    "attention_advice": "attention.materialised-scores",
}


@pytest.mark.parametrize("example", sorted(EXPECTED))
def test_h200_examples_show_their_finding_and_the_fix_removes_it(example):
    """Profiles recorded on the H200 by scripts/gpu.d/50-advice.sh (tests/data/advice/)."""
    before = advise(load_profile(DATA / "advice" / f"h200_{example}.before.profile.json"))
    after = advise(load_profile(DATA / "advice" / f"h200_{example}.after.profile.json"))
    assert EXPECTED[example] in rule_ids(before)
    assert EXPECTED[example] not in rule_ids(after)
    (finding,) = before.findings_of(EXPECTED[example])[:1]
    assert finding.est_saving_s > 0
