"""A user's own Triton kernels and custom ops on a GPU (issue 37): real launches of undeclared
kernels through the profiler's hook, their argument bytes against the exact minimum, a
torch.library op over a Triton kernel, and CUDA-graph replays costed from the capture."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

pytestmark = [pytest.mark.gpu, pytest.mark.triton]


@pytest.fixture(scope="module")
def user():
    """examples/user_triton.py, imported once (its torch.library op registers at import)."""
    import importlib.util
    import sys
    from pathlib import Path

    if "user_triton" not in sys.modules:
        spec = importlib.util.spec_from_file_location("user_triton", Path(__file__).parents[1] / "examples" / "user_triton.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["user_triton"] = module
        spec.loader.exec_module(module)
    return sys.modules["user_triton"]


def test_real_launches_record_argument_bytes(user) -> None:
    from rooflinectl.capture.run.triton_hook import triton_launches

    n = 1 << 20
    x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
    user.add(x, y)  # compiled before recording
    sink: list[dict] = []
    with triton_launches(sink):
        user.add(x, y)
        user.add(x[: n // 2], y[: n // 2])  # views: half the bytes
        rows = torch.randn(64, 512, device="cuda", dtype=torch.bfloat16)
        user.softmax(rows)
    torch.cuda.synchronize()
    assert [s["name"] for s in sink] == ["add_kernel", "add_kernel", "softmax_kernel"]
    assert [s["bytes"] for s in sink] == [3 * n * 4, 3 * n // 2 * 4, 2 * 64 * 512 * 2]
    assert all(s["from_arguments"] and s["flops"] is None and not s.get("captured") for s in sink)


def test_profile_places_undeclared_kernels_on_the_memory_roof(user) -> None:
    import rooflinectl

    n = 1 << 24
    x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")

    def step() -> None:
        user.add(x, y)
        user.triton_scale(x, 2.0)

    kernels = rooflinectl.profile(step, warmup=2, iters=3).kernels
    add = kernels[kernels["kernel"] == "add_kernel"].iloc[0]
    assert add["cost_source"] == "triton-args" and math.isnan(add["flops"])
    assert add["bytes"] / add["calls"] == 3 * n * 4 and add["bound"] == "memory"
    assert 0.2 < add["efficiency"] <= 1.05
    scale = kernels[kernels["kernel"] == "scale_kernel"].iloc[0]
    assert scale["op"] == "rltest::triton_scale" and scale["bytes"] / scale["calls"] == 2 * n * 4


def test_cuda_graph_replays_take_the_costs_recorded_at_capture(user) -> None:
    import rooflinectl

    n = 1 << 22
    x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
    user.add(x, y)

    def step() -> None:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            user.add(x, y)
        graph.replay()
        graph.replay()
        user.add(x, y)  # an eager launch after the capture keeps its own cost

    kernels = rooflinectl.profile(step, warmup=1, iters=2).kernels
    add = kernels[kernels["kernel"] == "add_kernel"]
    assert set(add["cost_source"]) == {"triton-args"}, add[["cost_source", "cost_note"]].to_string()
    assert (add["bytes"] / add["calls"] == 3 * n * 4).all()
    assert add["cost_note"].str.contains("replayed from a CUDA graph").any()
