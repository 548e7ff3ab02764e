"""The reference kernels declare their cost under the keys `rooflinectl profile` reads: a GEMM
reference kernel's declaration, passed through the capture's reading of launch_metadata, is a bf16
tensor-core gemm (on the H200 the keys once differed: tensor_core vs tensor_cores, no dtype)."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("triton")


@pytest.mark.parametrize("dtype, precision", [(torch.bfloat16, "bf16"), (torch.float16, "fp16")])
def test_matmul_kernel_declaration_reads_as_a_tensor_core_gemm(dtype, precision) -> None:
    from rooflinectl.capture.run.triton_hook import summarise_declaration
    from rooflinectl.costs.triton_declared import declared_cost
    from rooflinectl_kernels.matmul import _tiled_cost

    a, b, c = (torch.empty(64, 32, dtype=dtype), torch.empty(32, 48, dtype=dtype), torch.empty(64, 48, dtype=dtype))
    declared = summarise_declaration(_tiled_cost(None, None, {"a": a, "b": b, "c": c, "M": 64, "N": 48, "K": 32}))
    cost = declared_cost(declared)
    assert (cost.family, cost.unit, cost.dtype) == ("gemm", "tensor", precision)
    assert cost.flops == 2 * 64 * 48 * 32
    assert cost.bytes == (64 * 32 + 32 * 48 + 64 * 48) * 2


def test_a_16_bit_declaration_without_tensor_cores_stays_on_cuda_cores() -> None:
    """tensor_core=False is said, not left out: the profiler would read a missing key on 16-bit
    FLOPs as tensor-core work and hold an element-wise bf16 kernel to the tensor roof."""
    from rooflinectl.capture.run.triton_hook import summarise_declaration
    from rooflinectl.costs.triton_declared import declared_cost
    from rooflinectl_kernels.cost import declare

    declared = declare("ew16", family="elementwise", nbytes=100, flops=10, bits=16, dtype=torch.bfloat16)
    assert declared_cost(summarise_declaration(declared)).unit == "simt"
