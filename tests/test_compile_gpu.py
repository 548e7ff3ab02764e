"""torch.compile's Triton path on a CUDA GPU (the H200 test machine): Inductor's kernels carry
its cost, CUDA-graph replays (reduce-overhead) keep their ops, outputs do not change."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import rooflinectl  # noqa: E402

pytestmark = pytest.mark.gpu


def _block() -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.LayerNorm(1024), torch.nn.Linear(1024, 4096), torch.nn.GELU(approximate="tanh"),
                                torch.nn.Linear(4096, 1024)).cuda().to(torch.bfloat16).eval()
    return model, torch.randn(64, 128, 1024, device="cuda", dtype=torch.bfloat16)


@pytest.mark.parametrize("mode", ["default", "reduce-overhead"])
def test_compiled_triton_kernels_are_costed(mode: str) -> None:
    torch._dynamo.reset()
    model, x = _block()
    compiled = torch.compile(model, mode=None if mode == "default" else mode)

    def step() -> torch.Tensor:
        with torch.no_grad():
            return compiled(x).clone()

    profile = rooflinectl.profile(step, warmup=3, iters=4)  # warm-up compiles (and captures the graph)
    expected = model(x)
    assert torch.allclose(step().float(), expected.float(), atol=0.1, rtol=0.05)
    kernels = profile.kernels
    generated = kernels[kernels["kernel"].str.startswith("triton_")]
    assert len(generated) >= 1, kernels[["kernel", "op", "cost_source"]].to_string()
    assert set(generated["cost_source"]) == {"inductor"}, generated[["kernel", "cost_note"]].to_string()
    assert generated["op"].str.startswith("fused(").all()
    gemms = kernels[kernels["op"].isin(["aten::mm", "aten::addmm"])]
    assert gemms["flops"].sum() == pytest.approx(4 * 2 * 64 * 128 * 1024 * 4096 * 2, rel=0.01)  # 2 linears, 4 iters
    assert profile.summary["known_cost_time_share"] >= 0.95
    if mode == "reduce-overhead":
        assert kernels["cost_note"].str.contains("replayed from a CUDA graph").any()
