"""Builders of realistic ProfileData for the plot tests (no GPU, no capture stage needed).

The table mimics one H200 training step: bf16 GEMMs (compute-bound), softmax/norm/element-wise
(memory-bound), a zero-FLOP copy, kernels of unknown cost, a launch-bound tiny kernel, and one
row whose counts put it above its roof. The analysis columns come from the product's
place_on_roofline, so the plot sees the table it will see in real use.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from rooflinectl.analysis.roofline import place_on_roofline
from rooflinectl.ceilings.model import Ceilings, Roof
from rooflinectl.profile_model import ProfileData
from rooflinectl.schema import KERNEL_COLUMNS

CUTLASS = (
    "void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8>"
    "(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8::Params)"
)
GELU = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
    "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#1}::operator()() const::"
    "{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2> >(int, at::native::GeluCUDAKernelImpl("
    "at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#1}::"
    "operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2>)"
)
SOFTMAX = (
    "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, c10::BFloat16, float, c10::BFloat16, "
    "at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(c10::BFloat16*, c10::BFloat16 const*, int)"
)
COPY = (
    "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<"
    "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::"
    "{lambda()#7}::operator()() const::{lambda(float)#1}>(at::TensorIteratorBase&)::{lambda(int)#1}>(int)"
)
SM90 = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"

H200_BW = 4.8e12
H200_BF16 = 989e12


def h200_ceilings() -> Ceilings:
    return Ceilings(
        device_name="NVIDIA H200",
        device_kind="cuda",
        memory_bytes_per_s={"dram": Roof(H200_BW, "spec"), "l2": Roof(11.2e12, "measured")},
        compute_flops_per_s={
            "tensor.bf16": Roof(H200_BF16, "spec"),
            "tensor.fp16": Roof(989e12, "spec"),
            "tensor.tf32": Roof(494e12, "spec"),
            "simt.fp32": Roof(67e12, "spec"),
            "simt.fp64": Roof(34e12, "spec"),
        },
    )


# (kernel, op, family, module, precision, unit, calls, time_s, flops, bytes, cost_source)
GPU_ROWS: list[tuple[Any, ...]] = [
    (CUTLASS, "aten::mm", "gemm", "model.mlp.fc1", "bf16", "tensor", 10, 3.1e-3, 1.1e15 * 3.1e-3 * 0.37, 6.0e8, "analytic"),
    (SM90, "aten::addmm", "gemm", "model.mlp.fc2", "bf16", "tensor", 10, 2.2e-3, 2.2e-3 * 5.2e14, 5.0e8, "analytic"),
    (SOFTMAX, "aten::_softmax", "softmax", "model.attn", "fp32", "simt", 10, 1.3e-3, 2.7e9, 4.3e9, "analytic"),
    ("void my_lib::fused_rope_kernel<128>(float*, int)", "mylib::rope", "other", "model.attn.rope", "", "", 10, 9.0e-4, math.nan, math.nan, "none"),
    ("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_nn", "aten::bmm", "gemm", "model.attn", "bf16", "tensor", 20, 7.5e-4, 1.7e11, 3.3e8, "analytic"),
    ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, c10::BFloat16 const*)",
     "aten::native_layer_norm", "norm", "model.norm", "fp32", "simt", 10, 5.0e-4, 1.0e9, 1.9e9, "analytic"),
    ("void cutlass::Kernel2<cutlass_80_tensorop_s1688tf32gemm_256x128_16x3_nn_align4>(Params)", "aten::mm", "gemm", "model.head", "tf32", "tensor", 10, 6.0e-4, 6.0e-4 * 2.1e14, 4.0e8, "analytic"),
    ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "nccl:all_reduce", "other", "", "", "", 10, 3.0e-4, math.nan, math.nan, "none"),
    (COPY, "aten::copy_", "copy", "model", "bf16", "simt", 20, 1.5e-4, 0.0, 5.0e8, "analytic"),
    ("triton_poi_fused_add_mul_0", "triton_poi_fused_add_mul_0", "elementwise", "model.mlp", "bf16", "simt", 10, 2.0e-4, 1.3e8, 6.4e8, "triton"),
    (GELU, "aten::gelu", "elementwise", "model.mlp.act", "bf16", "simt", 10, 1.2e-4, 5.4e8, 4.0e8, "analytic"),
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4> >(float)",
     "aten::sum", "reduction", "model.loss", "fp32", "simt", 10, 1.0e-4, 6.7e7, 2.7e8, "analytic"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3> >(int)",
     "aten::add", "elementwise", "model.mlp", "bf16", "simt", 1, 1.0e-5, 1.0e7, 8.0e7, "analytic"),  # 8 TB/s: above roof
    ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int)",
     "aten::fill_", "elementwise", "model", "fp32", "simt", 300, 9.0e-4 * 0.9, 3.0e5, 1.2e6, "analytic"),  # launch-bound
    ("void at::native::indexSelectLargeIndex<c10::BFloat16, long, unsigned int, 2, 2, -2, true>(at::cuda::detail::TensorInfo)",
     "aten::embedding", "index", "model.embed", "bf16", "simt", 10, 6.0e-5, 0.0, 1.3e8, "analytic"),
]


def analyse(rows: list[tuple[Any, ...]], ceilings: Ceilings, device: str = "cuda") -> pd.DataFrame:
    """The contract columns of each row, placed on the roofline by the product's own function
    (analysis.roofline, tested against hand values in test_roofline_analysis.py)."""
    records = [
        {"kernel": kernel, "op": op, "op_family": family, "module": module, "shapes": "[4096, 4096]",
         "dtype": "bfloat16", "device": device, "origin": "triton" if source == "triton" else "aten",
         "calls": calls, "time_s": time_s, "flops": flops if source != "none" else math.nan,
         "bytes": nbytes if source != "none" else math.nan, "precision": precision, "unit": unit,
         "cost_source": source, "cost_note": "", "blocks": 1024.0, "threads_per_block": 256.0, "rank": 0,
         "source": "", "source_function": "", "source_call": "", "op_args": ""}
        for kernel, op, family, module, precision, unit, calls, time_s, flops, nbytes, source in rows
    ]
    columns = [c for c in KERNEL_COLUMNS if c in ("kernel", "op", "op_family", "module", "shapes", "dtype", "device",
                                                   "origin", "calls", "time_s", "flops", "bytes", "precision", "unit",
                                                   "cost_source", "cost_note", "blocks", "threads_per_block", "rank",
                                                   "source", "source_function", "source_call", "op_args")]
    table = place_on_roofline(pd.DataFrame.from_records(records, columns=columns), ceilings)[list(KERNEL_COLUMNS)]
    return table.sort_values("time_s", ascending=False, ignore_index=True)


def make_profile(rows: list[tuple[Any, ...]] | None = None, ceilings: Ceilings | None = None) -> ProfileData:
    ceilings = ceilings or h200_ceilings()
    kernels = analyse(rows if rows is not None else GPU_ROWS, ceilings)
    total = float(kernels["time_s"].sum())
    unknown = float(kernels.loc[kernels["cost_source"] == "none", "time_share"].sum())
    return ProfileData(
        kernels=kernels,
        ceilings=ceilings,
        metadata={"command": "python train_step.py --batch 64", "device": ceilings.device_name},
        summary={"total_kernel_time_s": total, "known_cost_time_share": 1 - unknown, "unknown_time_share": unknown},
    )


def attention_pair() -> tuple[ProfileData, ProfileData]:
    """A naive-attention profile and its scaled_dot_product_attention replacement (same module)."""
    b, h, s, d = 8, 16, 2048, 64
    qk = 2.0 * b * h * s * s * d
    scores_bytes = 2.0 * b * h * s * s
    naive = [
        ("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_nn", "aten::bmm", "gemm", "model.attn", "bf16", "tensor", 10, 2.6e-3, 10 * qk, 10 * (scores_bytes + 4 * b * h * s * d), "analytic"),
        ("ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_nt", "aten::bmm", "gemm", "model.attn", "bf16", "tensor", 10, 2.5e-3, 10 * qk, 10 * (scores_bytes + 4 * b * h * s * d), "analytic"),
        (SOFTMAX, "aten::_softmax", "softmax", "model.attn", "fp32", "simt", 10, 5.5e-3, 10 * 5 * scores_bytes / 2, 10 * 2 * scores_bytes, "analytic"),
        ("void at::native::vectorized_elementwise_kernel<4, at::native::MulScalarFunctor<c10::BFloat16>, at::detail::Array<char*, 2> >(int)",
         "aten::mul", "elementwise", "model.attn", "bf16", "simt", 10, 5.0e-3, 10 * scores_bytes / 2, 10 * 2 * scores_bytes, "analytic"),
        (CUTLASS, "aten::mm", "gemm", "model.proj", "bf16", "tensor", 10, 6.0e-4, 10 * 2.0 * b * s * 1024 * 1024, 10 * 3e7, "analytic"),
    ]
    sdpa = [
        ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, cutlass::bfloat16_t>, false, true, false>(pytorch_flash::Flash_fwd_params)",
         "aten::_scaled_dot_product_flash_attention", "attention", "model.attn", "bf16", "tensor", 10, 2.4e-3, 10 * 2 * qk, 10 * 8.0 * b * h * s * d, "analytic"),
        (CUTLASS, "aten::mm", "gemm", "model.proj", "bf16", "tensor", 10, 5.8e-4, 10 * 2.0 * b * s * 1024 * 1024, 10 * 3e7, "analytic"),
    ]
    return make_profile(naive), make_profile(sdpa)


def test_fixture_is_consistent() -> None:
    """The builder itself: shares sum to 1, one row above its roof, unknown rows have NaN cost."""
    data = make_profile()
    k = data.kernels
    assert abs(k["time_share"].sum() - 1.0) < 1e-9
    assert k["above_roof"].sum() == 1
    assert k.loc[k["cost_source"] == "none", "flops"].isna().all()
    assert set(k["bound"]) == {"memory", "compute", "latency", "unknown"}
    for side in attention_pair():
        assert not side.kernels["above_roof"].any()
