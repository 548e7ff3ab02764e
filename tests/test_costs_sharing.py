"""Tensor identity in byte counts: the same tensor twice is one read, disjoint views are not."""

from __future__ import annotations

import torch

from rooflinectl.attribution.calls import op_call
from rooflinectl.capture.run.session import profiling
from rooflinectl.costs import cost_of


def _cost(name: str, fn):
    with profiling("cpu") as capture:
        fn()
    op = next(o for o in capture.trace.ops if o.name == name)
    return cost_of(op_call(op))


def test_same_tensor_twice_is_read_once() -> None:
    x = torch.randn(256, 256)
    cost = _cost("aten::mul", lambda: x * x)
    assert cost.bytes == 2 * 256 * 256 * 4  # x read once + out written once


def test_views_of_one_packed_tensor_are_separate_reads() -> None:
    qkv = torch.randn(64, 3 * 128)
    q, k, _ = qkv.chunk(3, dim=-1)  # same storage, disjoint columns
    cost = _cost("aten::add", lambda: q + k)
    assert cost.bytes == 3 * 64 * 128 * 4  # q read + k read + out written


def test_same_tensor_twice_is_read_once_inside_nested_scopes() -> None:
    """Identities are read only for ops that may share an input; one nested in a module and a
    record_function (deep in the profiler's event tree) is still found."""

    class Square(torch.nn.Module):
        def forward(self, t):
            return t * t

    x = torch.randn(128, 128)

    def run():
        with torch.profiler.record_function("outer"):
            y = torch.randn(128, 128)
            Square()(x + y)  # add: two inputs alike but distinct: two reads

    with profiling("cpu") as capture:
        run()
    ops = {o.name: o for o in capture.trace.ops}
    assert cost_of(op_call(ops["aten::mul"])).bytes == 2 * 128 * 128 * 4
    assert cost_of(op_call(ops["aten::add"])).bytes == 3 * 128 * 128 * 4


def test_attribution_costs_each_distinct_call_once_but_keeps_aliasing_apart() -> None:
    """x * x and x * y record the same shapes; attribution caches costs per distinct call, and the
    cache must still tell the same tensor twice (one read) from two tensors (two reads)."""
    from rooflinectl.attribution.join import attribute

    x, y = torch.randn(64, 64), torch.randn(64, 64)
    with profiling("cpu") as capture:
        for _ in range(3):
            x * x
            x * y
    launches = attribute(capture.trace, "cpu", capture.metadata).launches
    muls = launches[launches["op"] == "aten::mul"]
    assert sorted(muls["bytes"]) == [2 * 64 * 64 * 4] * 3 + [3 * 64 * 64 * 4] * 3
