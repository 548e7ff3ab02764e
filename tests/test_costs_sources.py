"""Every cost goes through one entry point, rooflinectl.costs.cost_of / explain_cost: each source
type gives the cost its formula gives (checked against figures worked out by hand), a type with
no formula is refused, and no module outside costs/ builds a cost itself."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import pytest

from rooflinectl.costs import (
    Collective,
    InductorCppCall,
    InductorTritonLaunch,
    OpCall,
    TensorArg,
    Transfer,
    TritonArguments,
    TritonDeclaration,
    cost_of,
    explain_cost,
)

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(("kind", "size", "moved"), [("memset", 100, 100), ("device_copy", 100, 200),
                                                     ("peer_copy", 64, 64), ("host_copy", 8, 8)])
def test_transfers_move_their_size_once_or_twice(kind: str, size: int, moved: int) -> None:
    cost = cost_of(Transfer(kind, size))
    assert (cost.flops, cost.bytes, cost.family) == (0.0, moved, "copy")
    assert "size from the trace" in cost.note


def test_a_collective_costs_its_bus_bytes() -> None:
    # all-reduce of 1000 bf16 elements over 8 ranks: S = 2000 bytes, bus = S x 2(n-1)/n (nccl-tests)
    cost = cost_of(Collective("all_reduce", 1000, 1000, 8, "bf16", 2))
    assert cost.bytes == pytest.approx(2000 * 2 * 7 / 8) and cost.flops == 0.0 and cost.family == "collective"


def test_an_op_call_goes_to_its_registered_formula() -> None:
    a, b = TensorArg((64, 32), "fp32", 4), TensorArg((32, 16), "fp32", 4)
    cost, why = explain_cost(OpCall("aten::mm", (a, b)))
    assert why == "" and cost.flops == 2 * 64 * 32 * 16  # torch's FLOP counter
    assert cost.bytes == (64 * 32 + 32 * 16 + 64 * 16) * 4
    unknown, why = explain_cost(OpCall("aten::no_such_op", (a,)))
    assert unknown is None and "no cost formula" in why


def test_a_triton_call_of_several_launches_is_one_declaration() -> None:
    """Two launches (a GEMM and a small epilogue): FLOPs and bytes summed, held as the launch
    with the most FLOPs declares (tensor cores, bf16, gemm)."""
    gemm = {"flops": 2e9, "flops_by_width": {"bf16": 2e9}, "bytes": 3e6, "precision": "bf16", "tensor_cores": True,
            "family": "gemm"}
    epilogue = {"flops": 1e6, "flops_by_width": {"fp32": 1e6}, "bytes": 2e6, "precision": "fp32",
                "tensor_cores": False, "family": "elementwise"}
    cost = cost_of(TritonDeclaration((epilogue, gemm)))
    assert (cost.flops, cost.bytes) == (2e9 + 1e6, 5e6)
    assert (cost.unit, cost.dtype, cost.family) == ("tensor", "bf16", "gemm")
    assert "mixed widths ['bf16', 'fp32']" in cost.note
    one = cost_of(TritonDeclaration((epilogue,)))
    assert (one.flops, one.bytes, one.unit, one.family) == (1e6, 2e6, "simt", "elementwise")
    assert cost_of(TritonDeclaration(({**gemm, "bytes": None},))) is None  # no bytes: no cost


def test_an_undeclared_triton_launch_costs_its_arguments_bytes() -> None:
    cost = cost_of(TritonArguments({"bytes": 4096.0, "precision": "fp16"}))
    assert cost.bytes == 4096.0 and math.isnan(cost.flops) and cost.unit == "simt"


def test_inductor_kernels_cost_what_inductor_declares() -> None:
    call = OpCall("triton_poi_fused_add_0", (TensorArg((1024,), "bf16", 2), TensorArg((1024,), "bf16", 2)))
    cost = cost_of(InductorTritonLaunch("triton_poi_fused_add_0", {"kernel_num_gb": 4e-6, "kernel_flop": 1024}, call))
    assert cost.bytes == pytest.approx(4000.0) and cost.flops == 1024 and cost.dtype == "bf16"
    assert cost_of(InductorTritonLaunch("triton_poi_fused_add_0", {}, call)) is None
    buffers = [{"dtype": "float32", "shape": [10, 10], "role": "in"},
               {"dtype": "float32", "shape": [10, 10], "role": "in_out"}]
    cpp = cost_of(InductorCppCall("cpp_fused_add_0", buffers))
    assert cpp.bytes == 100 * 4 + 2 * 100 * 4  # in-place buffer read and written
    assert cost_of(InductorCppCall("cpp_fused_add_0", None)) is None


def test_a_type_with_no_formula_is_refused() -> None:
    with pytest.raises(TypeError, match="no cost source for dict"):
        cost_of({"bytes": 1})


def test_no_cost_is_built_outside_costs() -> None:
    """OpCost(...) is constructed in rooflinectl/costs/ only: attribution, the reference kernels'
    harness and the rest ask costs.cost_of."""
    built = []
    for path in [*(ROOT / "rooflinectl").rglob("*.py"), *(ROOT / "kernels").rglob("*.py")]:
        if "costs" in path.relative_to(ROOT).parts[:2]:
            continue
        text = path.read_text()
        if "OpCost(" not in text:
            continue
        built += [f"{path.relative_to(ROOT)}:{node.lineno}" for node in ast.walk(ast.parse(text))
                  if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "OpCost"]
    assert not built, built
