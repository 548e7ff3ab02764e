"""The examples of docs/custom-kernels.md run as written: the formula registered for a custom op
costs it (directly and in a CPU profile, where it wins over the inputs-and-outputs fallback), and
the Triton kernel's launch_metadata is read as the profiler reads it (the kernel itself runs under
Triton's interpreter on CPU)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import torch

DOC = Path(__file__).parents[1] / "docs" / "custom-kernels.md"


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)


@pytest.fixture(scope="module")
def formula_example() -> dict[str, Any]:
    """The first block run once (its op and formula register for the whole session); the
    registration is taken back afterwards."""
    from rooflinectl.costs import registry

    namespace: dict[str, Any] = {}
    exec(compile(_blocks()[0], str(DOC), "exec"), namespace)  # noqa: S102 - our own documentation
    yield namespace
    registry._REGISTRY.pop("mylib::rms_scale", None)
    registry._OPS.discard("mylib::rms_scale")


def test_the_doc_has_the_two_examples() -> None:
    blocks = _blocks()
    assert len(blocks) == 2 and "cost_formula" in blocks[0] and "launch_metadata=add_cost" in blocks[1]


def test_the_registered_formula_costs_the_op(formula_example: dict[str, Any]) -> None:
    from rooflinectl.costs.registry import explain_cost
    from rooflinectl.costs.tensors import OpCall, TensorArg

    x = TensorArg((128, 64), "fp32", 4, (64, 1), storage=1)
    cost, why = explain_cost(OpCall("mylib::rms_scale", (x, 1e-6)))
    assert why == "" and (cost.flops, cost.bytes, cost.family) == (3 * 128 * 64, 2 * 128 * 64 * 4, "norm")


def test_the_registered_formula_wins_in_a_cpu_profile(formula_example: dict[str, Any]) -> None:
    import rooflinectl

    x = torch.randn(256, 512)
    rms_scale = formula_example["rms_scale"]
    kernels = rooflinectl.profile(lambda: rms_scale(x, 1e-6), warmup=1, iters=2, device="cpu").kernels
    row = kernels[kernels["op"] == "mylib::rms_scale"].iloc[0]
    assert row["flops"] / row["calls"] == 3 * 256 * 512 and row["bytes"] / row["calls"] == 2 * 256 * 512 * 4
    assert row["cost_note"].startswith("mylib::rms_scale")


def test_the_triton_declaration_is_read_as_the_profiler_reads_it(tmp_path: Path) -> None:
    """The block is written to a file and imported: Triton reads a kernel's source from its file."""
    pytest.importorskip("triton")
    import importlib.util

    from rooflinectl.capture.run.triton_hook import summarise_declaration
    from rooflinectl.costs.triton_declared import declared_cost

    source = tmp_path / "doc_triton_example.py"
    source.write_text(_blocks()[1])
    spec = importlib.util.spec_from_file_location("doc_triton_example", source)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    namespace = vars(module)
    n = 1000
    x, y, out = torch.rand(n), torch.rand(n), torch.empty(n)
    declared = namespace["add_cost"](None, None, {"x_ptr": x, "y_ptr": y, "output_ptr": out, "n_elements": n})
    cost = declared_cost(summarise_declaration({"name": "add_kernel", **declared}))
    assert (cost.flops, cost.bytes, cost.unit, cost.dtype) == (n, 3 * n * 4, "simt", "fp32")
    if not torch.cuda.is_available():  # Triton's interpreter runs the kernel on CPU tensors
        namespace["add_kernel"][(4,)](x, y, out, n, BLOCK_SIZE=256)
        torch.testing.assert_close(out, x + y)
