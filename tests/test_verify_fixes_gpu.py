"""Issue 30's verifiers timed on the GPU: each fix known to be faster on its case is measured as a
gain, its measured saving never exceeds the profiled time it stands for, and a fix that cannot be
rebuilt or captured says why. Profiled through the API (or function mode for the CUDA graph)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

import rooflinectl
from rooflinectl.analysis.advice import advise
from rooflinectl.outputs.profile_file import load_profile
from rooflinectl.verify import rebuild_launches, verify_report

pytestmark = pytest.mark.gpu


def verified(fn, *args, budget_s: float = 4.0):
    data = rooflinectl.profile(fn, *args, warmup=2, iters=3).data
    return data, verify_report(advise(data), data, budget_s=budget_s)


def one(report, rule_id):
    found = [f for f in report.findings if f.rule_id == rule_id]
    assert found, [(f.rule_id, f.subject) for f in report.findings]
    return max(found, key=lambda f: f.est_saving_s)


def check_gain(data, f):
    v = f.verification
    assert v is not None and v.status == "gain", (f.evidence, v)
    assert 0 < v.measured_saving_s <= data.kernels.loc[list(f.rows), "time_s"].sum() * 1.0001
    assert v.fixed_s < v.original_s


def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1.0 + torch.tanh(0.79788456 * (x + 0.044715 * torch.pow(x, 3.0))))


class Block(torch.nn.Module):
    """A linear layer and its activation chain: the chain runs in this block's own module."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(1024, 1024)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return gelu_tanh(self.fc(x))


class Blocks(torch.nn.Module):
    def __init__(self, n: int) -> None:
        super().__init__()
        self.h = torch.nn.ModuleList(Block() for _ in range(n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.h:
            x = block(x)
        return x


def test_a_fusion_chain_repeated_in_four_blocks_is_one_finding_measured_faster_compiled():
    model = Blocks(4).cuda().to(torch.bfloat16)
    data, report = verified(model, torch.randn(16384, 1024, device="cuda", dtype=torch.bfloat16))
    f = one(report, "fusion.memory-chain")
    assert f.count == 4 and "{0-3}" in f.subject, f.subject
    check_gain(data, f)
    assert "torch.compile" in f.verification.detail


def test_fp32_element_wise_work_is_measured_faster_in_bf16():
    def scale_softmax(x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x * 2.0 + 1.0, dim=-1)

    data, report = verified(scale_softmax, torch.randn(8192, 8192, device="cuda"))
    check_gain(data, one(report, "precision.bf16-storage"))


def test_expert_gemms_are_measured_against_one_grouped_mm():
    counts = [512, 256, 128, 64, 32, 32, 16, 16]  # small, skewed: far under the roof, as the rule asks
    x = torch.randn(sum(counts), 2048, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(len(counts), 1024, 2048, device="cuda", dtype=torch.bfloat16)
    bounds = [sum(counts[:i]) for i in range(len(counts) + 1)]

    def loop(x, w):
        return torch.cat([x[bounds[e]:bounds[e + 1]] @ w[e].t() for e in range(len(counts))])

    _, report = verified(loop, x, w)
    v = one(report, "moe.grouped-gemm").verification
    assert v is not None and v.status in ("gain", "no-gain"), v  # measured either way, or says why not
    assert v.original_s > 0 and v.fixed_s > 0 and "torch._grouped_mm" in v.detail


STEP = '''
import torch

def make_inputs():
    return (torch.zeros(64, device="cuda"),)

def step(x):
    for _ in range(200):
        x = x + 1.0
    return x
'''


def test_launch_overhead_of_a_function_is_measured_against_its_cuda_graph(tmp_path):
    target = tmp_path / "tiny.py"
    target.write_text(STEP)
    out = tmp_path / "tiny.profile.json"
    run = subprocess.run([sys.executable, "-m", "rooflinectl", "profile", f"{target}:step", "-o", str(out),
                          "--warmup", "2", "--iters", "5"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    data = load_profile(str(out))
    report = verify_report(advise(data), data, budget_s=4.0)
    f = one(report, "launch.overhead")
    v = f.verification
    assert v is not None and v.status == "gain", (f.evidence, v)
    assert "CUDA-graph replay" in v.detail and "per run, applied to 5 runs" in v.detail


SYNCS = """
import torch
from rooflinectl.verify import rebuild_launches
x = torch.ones(8, device="cuda")
try:
    rebuild_launches.eager_and_graph(lambda x: x * float(x.sum().item()), (x,), {})
except Exception as exc:
    print("REFUSED", type(exc).__name__, str(exc).splitlines()[0][:200])
"""


def test_a_function_that_synchronises_cannot_be_captured_and_says_why():
    """In a child process: a refused capture must not leave this one's CUDA context in doubt."""
    run = subprocess.run([sys.executable, "-c", SYNCS], capture_output=True, text=True, timeout=120)
    assert "REFUSED" in run.stdout, run.stdout + run.stderr
    assert "captur" in run.stdout.lower(), run.stdout


def test_the_piece_models_file_loads_in_function_mode():
    path = Path(__file__).parents[1] / "scripts" / "advice_models.py"
    assert rebuild_launches.function_target({"command": ["rooflinectl", "profile", f"{path}:step"]})[1] == "step"


def measured(report, rule_id, *ops):
    """The finding of rule_id whose rebuilt label names every op, measured (not "not-run")."""
    found = [f for f in report.findings if f.rule_id == rule_id and f.verification is not None
             and all(op in f.verification.detail for op in ops)]
    assert found, [(f.rule_id, f.subject, f.verification) for f in report.findings]
    v = found[0].verification
    assert v.status in ("gain", "no-gain"), v
    assert v.original_s > 0 and v.fixed_s > 0
    return found[0]


def test_a_chain_with_floor_divide_and_sort_is_rebuilt_and_timed():
    """floor_divide, sort: rebuilds added after the last H200 run (MoE routing, Mixtral's top-k)."""
    def route(x, y):
        return torch.sort(torch.floor_divide(x, y) * 2.0 + x, dim=-1)[0]

    x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    y = torch.rand(4096, 4096, device="cuda", dtype=torch.bfloat16) + 0.5
    data, report = verified(route, x, y)
    f = measured(report, "fusion.memory-chain", "floor_divide")  # sort joins the chain where it is memory-bound
    if f.verification.status == "gain":
        check_gain(data, f)


class KVCache(torch.nn.Module):
    """GPT-2's KV cache in one module: the key and the value each joined to their cache (two cats)."""

    def forward(self, kc, vc, k, v):
        return torch.cat([kc, k], dim=2), torch.cat([vc, v], dim=2)


class Attention(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cache = KVCache()

    def forward(self, *tensors):
        return self.cache(*tensors)


def test_a_kv_cache_chain_of_cats_is_rebuilt_and_timed():
    """aten::cat: GPT-2's cat+cat chain (12x) was "not run" on the H200 before its rebuild existed."""
    cache = [torch.randn(8, 12, 1024, 64, device="cuda", dtype=torch.bfloat16) for _ in range(2)]
    new = [torch.randn(8, 12, 1, 64, device="cuda", dtype=torch.bfloat16) for _ in range(2)]
    data, report = verified(Attention().cuda(), *cache, *new)
    f = measured(report, "fusion.memory-chain", "cat")
    if f.verification.status == "gain":
        check_gain(data, f)
