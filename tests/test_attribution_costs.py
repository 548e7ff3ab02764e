"""Attribution's side of the cost model: a Triton kernel's declared cost held to the roof of its
width, why a kernel has no cost, the hints a trace gives beyond an op's inputs, and tensor-list
shapes the Chrome trace leaves out. Built from small synthetic traces in the profiler's format."""

from __future__ import annotations

import pytest
import torch

from rooflinectl.attribution.join import attribute
from rooflinectl.capture.read.trace import from_chrome_trace
from rooflinectl.capture.run.session import profiling
from rooflinectl.capture.run.triton_hook import summarise_declaration


def _kernel(name: str, ts: float, external: int, correlation: int) -> dict:
    return {"ph": "X", "cat": "kernel", "name": name, "ts": ts, "dur": 10.0,
            "args": {"External id": external, "correlation": correlation, "grid": [8, 1, 1], "block": [128, 1, 1]}}


def _launch(ts: float, correlation: int) -> dict:
    return {"ph": "X", "cat": "cuda_runtime", "name": "cuLaunchKernel", "ts": ts, "dur": 1.0,
            "args": {"correlation": correlation, "External id": 0}}


@pytest.mark.parametrize(("metadata", "unit", "precision"), [
    ({"flops16": 2e9, "bytes": 1e7}, "tensor", "fp16"),  # the old path held it to fp32 CUDA cores
    ({"flops16": 2e9, "bytes": 1e7, "dtype": "bf16"}, "tensor", "bf16"),
    ({"flops8": 2e9, "bytes": 1e7}, "tensor", "fp8"),
    ({"flops32": 2e9, "bytes": 1e7, "tensor_cores": True}, "tensor", "tf32"),  # tl.dot's default TF32
    ({"flops32": 2e6, "bytes": 1e7}, "simt", "fp32"),  # element-wise fp32
    ({"flops16": 2e6, "bytes": 1e7, "tensor_cores": False}, "simt", "fp16"),
    ({"flops16": 0, "bytes": 1e7}, "simt", "fp16"),  # a copy kernel declares no math
])
def test_triton_declared_cost_is_held_to_its_width(metadata, unit, precision):
    summary = summarise_declaration({"name": "matmul_kernel", **metadata})
    trace = from_chrome_trace({"traceEvents": [_launch(1.0, 5), _kernel("matmul_kernel", 5.0, 0, 5)]})
    trace.triton_launches = [summary]
    row = attribute(trace, "cuda", {}).launches.iloc[0]
    assert (row["cost_source"], row["unit"], row["precision"]) == ("triton", unit, precision)
    assert row["op_family"] == "other"  # how the math runs, not what op the kernel is
    assert row["flops"] == sum(v for k, v in metadata.items() if k.startswith("flops"))
    assert row["bytes"] == 1e7


def test_triton_mixed_widths_keep_each_width_and_say_so():
    summary = summarise_declaration({"name": "k", "flops16": 3e9, "flops32": 1e9, "bytes": 1e6})
    assert summary["flops_by_width"] == {"fp16": 3e9, "fp32": 1e9}
    assert (summary["flops"], summary["precision"], summary["tensor_cores"]) == (4e9, "fp16", True)
    trace = from_chrome_trace({"traceEvents": [_launch(1.0, 5), _kernel("k", 5.0, 0, 5)]})
    trace.triton_launches = [summary]
    row = attribute(trace, "cuda", {}).launches.iloc[0]
    assert "mixed widths" in row["cost_note"]


def _op(name: str, ts: float, dur: float, external: int, dims: list, types: list, concrete: list | None = None) -> dict:
    return {"ph": "X", "cat": "cpu_op", "name": name, "ts": ts, "dur": dur, "tid": 1,
            "args": {"External id": external, "Input Dims": dims, "Input type": types,
                     "Concrete Inputs": concrete or [""] * len(types)}}


def test_unknown_kernels_say_why():
    events = [
        # an op without formula
        _op("aten::histc", 0.0, 5.0, 1, [[1024]], ["float"]),
        _launch(1.0, 11), _kernel("nonzero_kernel", 10.0, 1, 11),
        # a formula that raises inside flop_counter (mm with mismatched inner dims)
        _op("aten::mm", 20.0, 5.0, 2, [[4, 8], [9, 3]], ["float", "float"]),
        _launch(21.0, 12), _kernel("gemm_kernel", 30.0, 2, 12),
        # a foreach over a list the trace recorded without shapes
        _op("aten::_foreach_add_", 40.0, 5.0, 3, [[], [], []], ["TensorList", "TensorList", "Scalar"], ["", "", "1"]),
        _launch(41.0, 13), _kernel("multi_tensor_apply_kernel", 50.0, 3, 13),
        # a kernel no op launched
        _launch(60.0, 14), _kernel("mystery_kernel", 70.0, 99, 14),
    ]
    launches = attribute(from_chrome_trace({"traceEvents": events}), "cuda", {}).launches.set_index("kernel")
    assert (launches["cost_source"] == "none").all()
    notes = launches["cost_note"]
    assert notes["nonzero_kernel"] == "no cost formula for aten::histc"
    assert notes["gemm_kernel"].startswith("formula raised AssertionError")
    assert "more than 30 tensors" in notes["multi_tensor_apply_kernel"]
    assert notes["mystery_kernel"].startswith("no op linked")


def test_index_output_shape_from_the_restride_child():
    """torch.profiler records no index tensors for aten::index; x[:, idx] on CPU is costed from
    the as_strided view it makes of x (the old formula had no index tensors: unknown)."""
    x, idx = torch.randn(50, 40, 16), torch.tensor([3, 1, 4, 1, 5])
    with profiling("cpu") as capture:
        y = x[:, idx]
    launches = attribute(capture.trace, "cpu", capture.metadata).launches
    row = launches[launches["op"] == "aten::index"].iloc[0]
    assert row["cost_source"] == "analytic"
    assert row["bytes"] == 5 * 8 + 2 * y.numel() * 4  # one int64 index of 5; selected elements read and written


def test_long_tensor_lists_get_their_shapes_from_the_event_tree():
    """The Chrome trace drops the shapes of lists of more than 30 tensors (an optimizer's
    parameters); rooflinectl's own capture fills them in, so the update has a cost."""
    params = [torch.randn(16, 8) for _ in range(40)]
    grads = [torch.randn(16, 8) for _ in range(40)]
    with profiling("cpu") as capture:
        torch._foreach_add_(params, grads, alpha=-0.1)
    launches = attribute(capture.trace, "cpu", capture.metadata).launches
    row = launches[launches["op"] == "aten::_foreach_add_"].iloc[0]
    elements = 40 * 16 * 8
    assert row["flops"] == elements
    assert row["bytes"] == 3 * elements * 4  # both lists read, the first written


def test_tensor_list_without_dtypes_is_unknown_not_fp32():
    """A bare Chrome trace records no dtype for tensor-list elements; the old code assumed fp32,
    which put the MoE loop's bf16 torch.cat at 159% of its roof."""
    from rooflinectl.attribution.calls import op_call
    from rooflinectl.capture.read.raw import RawOp
    from rooflinectl.costs import explain_cost

    op = RawOp(external_id=1, name="aten::cat", category="cpu_op", tid=1, ts_ns=0, dur_ns=10,
               input_dims=[[[4, 8], [6, 8]], []], input_types=["TensorList", "Scalar"], concrete_inputs=["", "0"])
    cost, why = explain_cost(op_call(op))
    assert cost is None and "no dtype for tensor-list elements" in why
    op.list_dtypes = [["bfloat16", "bfloat16"], None]  # what rooflinectl's capture adds
    cost, _ = explain_cost(op_call(op))
    assert cost.bytes == 2 * (4 * 8 + 6 * 8) * 2
