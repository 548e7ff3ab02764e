"""Which roof an op is held against: the math unit and precision it ran in, not only its dtype.

PyTorch's defaults (checked with Nsight Compute on the H200: fp32 convolutions and fp32 SDPA
counted as tf32 tensor-core ops, fp32 matmuls as FFMA instructions): fp32 matmuls
run on CUDA cores unless torch.backends.cuda.matmul.allow_tf32 (float32_matmul_precision
"high"/"medium"); fp32 convolutions run as TF32 since cudnn.allow_tf32 is True; fp32 SDPA
kernels use TF32 tensor cores. Element-wise work always runs on CUDA cores ("simt").
Collective communication is held against the link between devices ("link"), not a compute unit.
"""

from __future__ import annotations

from rooflinectl.profile_sections import RunMetadata

TENSOR_FAMILIES = ("gemm", "conv", "attention")
TENSOR_DTYPES = {"bf16": "bf16", "fp16": "fp16", "fp8": "fp8", "int8": "int8", "fp64": "fp64"}


def unit_and_precision(family: str, dtype: str, device_kind: str, metadata: RunMetadata) -> tuple[str, str]:
    """(unit, precision) for the roof lookup: unit is "tensor", "simt" or "link" (collectives)."""
    if family == "collective":
        return "link", _simt_precision(dtype)
    if device_kind != "cuda" or family not in TENSOR_FAMILIES:
        return "simt", _simt_precision(dtype)
    if dtype in TENSOR_DTYPES:
        return "tensor", TENSOR_DTYPES[dtype]
    if dtype == "fp32":
        tf32 = {
            "gemm": bool(metadata.get("allow_tf32_matmul")),
            "conv": bool(metadata.get("allow_tf32_cudnn", True)),
            "attention": True,
        }[family]
        return ("tensor", "tf32") if tf32 else ("simt", "fp32")
    return "simt", _simt_precision(dtype)


def _simt_precision(dtype: str) -> str:
    if "->" in dtype:  # a cast ("bf16->fp32"): the wider side's lanes
        sides = [_simt_precision(d) for d in dtype.split("->")]
        order = ("fp64", "fp32", "bf16", "fp16", "fp8", "int", "bool")
        return min(sides, key=lambda p: order.index(p) if p in order else len(order))
    if dtype in ("fp64", "fp32", "bf16", "fp16", "fp8"):
        return dtype
    if dtype == "bool":
        return "bool"
    return "int"
