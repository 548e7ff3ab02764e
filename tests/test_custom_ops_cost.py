"""A user's own ops (`torch.library`), costed by the registry's fallback (costs/custom_ops.py):
minimum bytes from their inputs and the outputs their fake implementation gives, FLOPs unknown,
held to the memory roof with a lower-bound efficiency; a registered formula wins.

The ops do their work in numpy, as a C++/CUDA extension would outside aten: no aten op under
them carries a cost of its own (when one does, its formula, with FLOPs, is the unit of work)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import rooflinectl
from rooflinectl.costs.custom_ops import is_custom_op
from rooflinectl.costs.registry import explain_cost
from rooflinectl.costs.tensors import OpCall, TensorArg


@torch.library.custom_op("rltest::numpy_add", mutates_args=())
def numpy_add(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    return torch.from_numpy(x.numpy() + alpha * y.numpy())


@numpy_add.register_fake
def _(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    return torch.empty_like(x)


@torch.library.custom_op("rltest::numpy_rowsum", mutates_args=())
def numpy_rowsum(x: torch.Tensor) -> torch.Tensor:  # no fake implementation: outputs unknown
    return torch.from_numpy(np.ascontiguousarray(x.numpy().sum(axis=1)))


@torch.library.custom_op("rltest::numpy_scale_", mutates_args=("x",))
def numpy_scale_(x: torch.Tensor, alpha: float) -> None:
    np.multiply(x.numpy(), alpha, out=x.numpy())


@numpy_scale_.register_fake
def _(x: torch.Tensor, alpha: float) -> None:
    return None


def test_which_ops_are_a_users() -> None:
    assert is_custom_op("rltest::numpy_add")
    assert not is_custom_op("aten::add") and not is_custom_op("c10d::allreduce_")
    assert not is_custom_op("rltest::no_such_op") and not is_custom_op("autograd::engine::evaluate_function: X")


def _call(name: str, *args: object) -> OpCall:
    return OpCall(name, tuple(args))


def test_inputs_and_fake_outputs_give_the_exact_minimum() -> None:
    x = TensorArg((256, 128), "bf16", 2, (128, 1), storage=1)
    y = TensorArg((256, 128), "bf16", 2, (128, 1), storage=2)
    cost, why = explain_cost(_call("rltest::numpy_add", x, y, 0.5))
    assert why == "" and math.isnan(cost.flops)
    assert cost.bytes == 3 * 256 * 128 * 2  # two inputs read, one output written
    same, _ = explain_cost(_call("rltest::numpy_add", x, x, 0.5))
    assert same.bytes == 2 * 256 * 128 * 2  # one tensor passed twice is read once


def test_without_a_fake_the_outputs_are_left_out_and_said_so() -> None:
    cost, _ = explain_cost(_call("rltest::numpy_rowsum", TensorArg((64, 32), "fp32", 4, (32, 1), storage=1)))
    assert cost.bytes == 64 * 32 * 4 and "no fake" in cost.note


def test_a_mutated_input_counts_once() -> None:
    cost, _ = explain_cost(_call("rltest::numpy_scale_", TensorArg((1000,), "fp32", 4, (1,), storage=1), 2.0))
    assert cost.bytes == 4000


def test_a_custom_op_profiled_on_cpu_end_to_end() -> None:
    x, y = torch.randn(512, 256), torch.randn(512, 256)
    sliced = torch.randn(512, 512)[:, :256]  # a view: its span counts, not its storage

    def step() -> None:
        numpy_add(x, y, 0.5)
        numpy_add(sliced.contiguous(), y, 2.0)

    kernels = rooflinectl.profile(step, warmup=1, iters=3, device="cpu").kernels
    rows = kernels[kernels["op"] == "rltest::numpy_add"]
    assert len(rows) >= 1 and set(rows["cost_source"]) == {"analytic"}
    assert rows["flops"].isna().all() and (rows["bound"] != "unknown").all()
    per_call = rows["bytes"].sum() / rows["calls"].sum()
    assert per_call == pytest.approx(3 * 512 * 256 * 4)
    assert (rows["efficiency"] > 0).all() and rows["cost_note"].str.contains("custom op").all()


def test_a_registered_formula_wins_over_the_fallback() -> None:
    from rooflinectl.costs import OpCost, cost_formula, registry

    @cost_formula("rltest::numpy_rowsum", family="reduction")
    def rowsum_cost(call: OpCall) -> OpCost:
        """One add per element; the input read once, one value per row written."""
        (x,) = call.tensors()
        return OpCost(float(x.numel), float(x.nbytes + x.shape[0] * x.itemsize), "reduction", x.dtype, "rowsum")

    try:
        cost, _ = explain_cost(_call("rltest::numpy_rowsum", TensorArg((64, 32), "fp32", 4, (32, 1), storage=1)))
        assert (cost.flops, cost.bytes, cost.note) == (64 * 32, 64 * 32 * 4 + 64 * 4, "rowsum")
    finally:
        registry._REGISTRY.pop("rltest::numpy_rowsum", None)
        registry._OPS.discard("rltest::numpy_rowsum")


def test_an_extension_kernel_under_a_custom_op_on_gpu_is_the_users() -> None:
    """A GPU trace (synthetic, the profiler's format): an extension's kernel launched inside
    rltest::numpy_add carries the op's exact minimum and counts as a custom kernel (origin other)."""
    from rooflinectl.attribution.join import attribute
    from rooflinectl.capture.read.trace import from_chrome_trace

    op = {"ph": "X", "cat": "cpu_op", "name": "rltest::numpy_add", "ts": 0.0, "dur": 50.0, "tid": 1,
          "args": {"External id": 7, "Input Dims": [[4096], [4096], []], "Input type": ["float", "float", "Scalar"],
                   "Concrete Inputs": ["", "", "0.5"]}}
    launch = {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 10.0, "dur": 2.0, "tid": 1,
              "args": {"correlation": 3, "External id": 7}}
    kernel = {"ph": "X", "cat": "kernel", "name": "axpb_kernel(float const*, float*, float, float, long)",
              "ts": 20.0, "dur": 5.0, "args": {"External id": 7, "correlation": 3, "grid": [16, 1, 1],
                                                "block": [256, 1, 1]}}
    row = attribute(from_chrome_trace({"traceEvents": [op, launch, kernel]}), "cuda", {}).launches.iloc[0]
    assert (row["op"], row["origin"], row["cost_source"]) == ("rltest::numpy_add", "other", "analytic")
    assert row["bytes"] == 3 * 4096 * 4 and math.isnan(row["flops"])
