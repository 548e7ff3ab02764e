"""Formulas for the ops a training step adds (norm, pooling, dropout backward; optimizer and AMP
multi-tensor ops) and the ops MoE and vision models use (_grouped_mm, pooling, upsampling,
topk, index_add, advanced indexing). Hand values with their arithmetic; every op here had no
formula before (its kernels showed no cost) unless a test says which old number it corrects.
"""

from __future__ import annotations

import pytest
from cost_helpers import T, named, named_cost

from rooflinectl.costs import OpCall, explain_cost
from rooflinectl.costs.memory_ops import advanced_index_shape

N, C, HW = 32, 64, 14 * 14
X = N * C * HW  # elements of an [N, C, 14, 14] activation


# --- normalisation backward ----------------------------------------------------------------------

def test_native_batch_norm_backward_training():
    c = named_cost("aten::native_batch_norm_backward", grad_out=T(N, C, 14, 14, dtype="bf16"),
                   input=T(N, C, 14, 14, dtype="bf16"), weight=T(C), running_mean=T(C), running_var=T(C),
                   save_mean=T(C), save_invstd=T(C), train=True, eps=1e-5, output_mask=[True, True, True])
    assert c.flops == 9 * X  # two channel sums, then grad_input
    # dy, x read (bf16), five [C] fp32 tensors read; grad_input (bf16) and grad weight, bias (fp32) written
    assert c.bytes == 2 * X * 2 + 5 * C * 4 + X * 2 + 2 * C * 4
    assert (c.family, c.dtype) == ("norm", "bf16")


def test_batch_norm_backward_inference_input_grad_only():
    c = named_cost("aten::native_batch_norm_backward", grad_out=T(N, C, 14, 14), input=T(N, C, 14, 14),
                   weight=T(C), running_mean=T(C), running_var=T(C), train=False, eps=1e-5,
                   output_mask=[True, False, False])
    assert c.flops == 1 * X  # dy * invstd * weight, folded
    assert c.bytes == 2 * X * 4 + 3 * C * 4 + X * 4


def test_cudnn_batch_norm_backward_argument_order():
    # (input, grad_output, ...): input first, unlike native_batch_norm_backward
    c = named_cost("aten::cudnn_batch_norm_backward", input=T(N, C, 14, 14, dtype="fp16"),
                   grad_output=T(N, C, 14, 14, dtype="fp16"), weight=T(C), save_mean=T(C), save_var=T(C),
                   epsilon=1e-5, reserveSpace=T(0, dtype="uint8"))
    assert c.flops == 9 * X
    assert c.bytes == 2 * X * 2 + 3 * C * 4 + X * 2 + 2 * C * 4


def test_batch_norm_forward_inference_is_cheaper():
    args = {"input": T(N, C, 14, 14), "weight": T(C), "bias": T(C), "running_mean": T(C), "running_var": T(C),
            "momentum": 0.1, "eps": 1e-5}
    assert named_cost("aten::native_batch_norm", **args, training=True).flops == 6 * X
    assert named_cost("aten::native_batch_norm", **args, training=False).flops == 2 * X  # was 6 * X


def test_group_norm_backward():
    c = named_cost("aten::native_group_norm_backward", grad_out=T(N, C, 14, 14), input=T(N, C, 14, 14),
                   mean=T(N, 8), rstd=T(N, 8), weight=T(C), N=N, C=C, HxW=HW, group=8,
                   output_mask=[True, True, True])
    assert c.flops == 10 * X
    assert c.bytes == 2 * X * 4 + 2 * N * 8 * 4 + C * 4 + X * 4 + 2 * C * 4


def test_layer_norm_backward_output_mask():
    args = {"grad_out": T(8, 128, 768), "input": T(8, 128, 768), "normalized_shape": [768], "mean": T(8, 128, 1),
            "rstd": T(8, 128, 1), "weight": T(768), "bias": T(768)}
    full = named_cost("aten::native_layer_norm_backward", **args, output_mask=[True, True, True])
    only_input = named_cost("aten::native_layer_norm_backward", **args, output_mask=[True, False, False])
    x = 8 * 128 * 768
    reads = 2 * x * 4 + 2 * 8 * 128 * 4 + 768 * 4
    assert full.bytes == reads + x * 4 + 2 * 768 * 4
    assert only_input.bytes == reads + x * 4  # grad weight and bias not asked for: not written


def test_rms_norm_backward():
    c = named_cost("aten::_fused_rms_norm_backward", grad_out=T(4, 256, 512, dtype="bf16"),
                   input=T(4, 256, 512, dtype="bf16"), normalized_shape=[512], rstd=T(4, 256, 1), weight=T(512, dtype="bf16"),
                   output_mask=[True, True])
    x = 4 * 256 * 512
    assert c.flops == (6 + 3) * x  # grad_input 6, grad_weight 3 per element
    assert c.bytes == 2 * x * 2 + 4 * 256 * 4 + 512 * 2 + x * 2 + 512 * 2


def test_native_dropout_backward():
    c = named_cost("aten::native_dropout_backward", grad_output=T(4, 512, 768, dtype="bf16"),
                   mask=T(4, 512, 768, dtype="bool"), scale=1.0 / 0.9)
    x = 4 * 512 * 768
    assert c.flops == x  # the scale; the mask selects
    assert c.bytes == x * 2 + x * 1 + x * 2  # grad and bool mask read, grad_input written


# --- pooling and upsampling ----------------------------------------------------------------------

def test_max_pool2d_with_indices_resnet_stem():
    c = named_cost("aten::max_pool2d_with_indices", self=T(32, 64, 112, 112, dtype="bf16"), kernel_size=[3, 3],
                   stride=[2, 2], padding=[1, 1], dilation=[1, 1], ceil_mode=False)
    out = 32 * 64 * 56 * 56  # (112 + 2 - 2 - 1) // 2 + 1 = 56
    assert c.flops == 0  # comparisons only
    assert c.bytes == 32 * 64 * 112 * 112 * 2 + out * (2 + 8)  # input; bf16 values and int64 indices


def test_pool_ceil_mode_and_default_stride():
    c = named_cost("aten::avg_pool2d", self=T(1, 3, 7, 7), kernel_size=[2, 2], stride=[], ceil_mode=True)
    out = 3 * 4 * 4  # stride = kernel 2; ceil((7 - 2) / 2) + 1 = 4
    assert c.flops == out * 4  # one add per window element
    assert c.bytes == 3 * 7 * 7 * 4 + out * 4


def test_max_pool2d_backward():
    c = named_cost("aten::max_pool2d_with_indices_backward", grad_output=T(32, 64, 56, 56, dtype="bf16"),
                   self=T(32, 64, 112, 112, dtype="bf16"), kernel_size=[3, 3], stride=[2, 2], padding=[1, 1],
                   dilation=[1, 1], ceil_mode=False, indices=T(32, 64, 56, 56, dtype="int64"))
    out, x = 32 * 64 * 56 * 56, 32 * 64 * 112 * 112
    assert c.flops == out  # one add per grad_output element
    assert c.bytes == out * 2 + out * 8 + x * 2  # grad_output and indices read, grad_input written


def test_adaptive_avg_pool_and_backward():
    fwd = named_cost("aten::_adaptive_avg_pool2d", self=T(32, 2048, 7, 7), output_size=[1, 1])
    assert fwd.flops == 32 * 2048 * 49 and fwd.bytes == 32 * 2048 * 49 * 4 + 32 * 2048 * 4
    bwd = named_cost("aten::_adaptive_avg_pool2d_backward", grad_output=T(32, 2048, 1, 1), self=T(32, 2048, 7, 7))
    assert bwd.bytes == 32 * 2048 * 4 + 32 * 2048 * 49 * 4


def test_upsample_vec_overload_scale_factors():
    c = named_cost("aten::upsample_nearest2d.vec", input=T(2, 16, 10, 12, dtype="fp16"), scale_factors=[2.0, 2.0])
    assert c.flops == 0
    assert c.bytes == 2 * 16 * 10 * 12 * 2 + 2 * 16 * 20 * 24 * 2
    bilinear = named_cost("aten::upsample_bilinear2d", self=T(2, 16, 10, 12), output_size=[15, 7],
                          align_corners=False)
    assert bilinear.flops == 7 * 2 * 16 * 15 * 7  # 4 taps: 4 multiplies, 3 adds per output


def test_upsample_backward():
    c = named_cost("aten::upsample_bilinear2d_backward", grad_output=T(2, 16, 20, 24), output_size=[20, 24],
                   input_size=[2, 16, 10, 12], align_corners=False)
    assert c.flops == 2 * 16 * 20 * 24 * 8  # a multiply-add per tap
    assert c.bytes == 2 * 16 * 20 * 24 * 4 + 2 * 16 * 10 * 12 * 4


# --- GEMM variants -------------------------------------------------------------------------------

def test_grouped_mm_moe_forward():
    # 16384 tokens sorted by expert, 8 experts of [2048 -> 4096]
    c = named_cost("aten::_grouped_mm", self=T(16384, 2048, dtype="bf16"), mat2=T(8, 2048, 4096, dtype="bf16"),
                   offs=T(8, dtype="int32"))
    assert c.flops == 2 * 16384 * 2048 * 4096  # every token through one expert
    assert c.bytes == (16384 * 2048 + 8 * 2048 * 4096 + 16384 * 4096) * 2 + 8 * 4
    assert (c.family, c.dtype) == ("gemm", "bf16")


@pytest.mark.parametrize(("a", "b", "flops", "out"), [
    ((64, 32), (4, 32, 16), 2 * 64 * 32 * 16, 64 * 16),  # 2-d x 3-d: rows split by offs
    ((4, 64, 32), (32, 48), 2 * 64 * 32 * 48, 64 * 48),  # 3-d x 2-d: columns split
    ((64, 96), (96, 16), 2 * 64 * 96 * 16, 4 * 64 * 16),  # 2-d x 2-d: K split, one output per group
    ((4, 8, 32), (4, 32, 16), 2 * 4 * 8 * 32 * 16, 4 * 8 * 16),  # 3-d x 3-d: batched
])
def test_grouped_mm_layouts(a, b, flops, out):
    c = named_cost("aten::_grouped_mm", self=T(*a), mat2=T(*b), offs=T(4, dtype="int32"))
    assert c.flops == flops
    assert c.bytes == (T(*a).numel + T(*b).numel + out) * 4 + 4 * 4


def test_addmm_activation_gelu():
    c = named_cost("aten::_addmm_activation", self=T(128), mat1=T(64, 256), mat2=T(256, 128), use_gelu=True)
    assert c.flops == 2 * 64 * 128 * 256 + 5 * 64 * 128
    assert c.bytes == (128 + 64 * 256 + 256 * 128 + 64 * 128) * 4


def test_mv_addmv_addbmm():
    assert named_cost("aten::mv", self=T(300, 200), vec=T(200)).flops == 2 * 300 * 200
    addmv = named_cost("aten::addmv", self=T(300), mat=T(300, 200), vec=T(200))
    assert addmv.bytes == (300 + 300 * 200 + 200 + 300) * 4
    addbmm = named_cost("aten::addbmm", self=T(8, 16), batch1=T(5, 8, 32), batch2=T(5, 32, 16))
    assert addbmm.flops == 2 * 5 * 8 * 16 * 32
    assert addbmm.bytes == (8 * 16 + 5 * 8 * 32 + 5 * 32 * 16 + 8 * 16) * 4  # one [8, 16] output


# --- multi-tensor optimizer and AMP ops ----------------------------------------------------------

PARAMS = [T(768, 3072), T(3072), T(768)]
ELEMS = 768 * 3072 + 3072 + 768


def test_foreach_norm_writes_one_value_per_tensor():
    c = named_cost("aten::_foreach_norm.Scalar", self=PARAMS, ord=2)
    assert c.flops == 2 * ELEMS  # square and add
    assert c.bytes == ELEMS * 4 + 3 * 4


def test_amp_unscale():
    c = named_cost("aten::_amp_foreach_non_finite_check_and_unscale_", self=PARAMS, found_inf=T(1), inv_scale=T(1))
    assert c.flops == ELEMS
    assert c.bytes == 2 * ELEMS * 4 + 2 * 4  # gradients read and written; two scalars


def test_foreach_copy_reads_only_the_source():
    c = named_cost("aten::_foreach_copy_", self=PARAMS, src=[T(768, 3072), T(3072), T(768)])
    assert c.bytes == ELEMS * 4 + ELEMS * 4  # src read, self written (self not read)


def test_fused_sgd_with_momentum():
    bufs = [T(768, 3072), T(3072), T(768)]
    c = named_cost("aten::_fused_sgd_", self=PARAMS, grads=[T(768, 3072), T(3072), T(768)], momentum_buffer_list=bufs,
                   weight_decay=0.0, momentum=0.9, lr=0.1, dampening=0.0, nesterov=False, maximize=False,
                   is_first_step=False)
    assert c.flops == 4 * ELEMS  # momentum update and step; no weight decay
    assert c.bytes == 3 * ELEMS * 4 + 2 * ELEMS * 4


def test_foreach_list_recorded_without_shapes_says_why():
    # torch.profiler's Chrome trace records no shapes for a list of more than 30 tensors
    call = OpCall("aten::_foreach_add_", ([], [], -0.1), types=("TensorList", "TensorList", "Scalar"))
    cost, why = explain_cost(call)
    assert cost is None and "more than 30 tensors" in why


# --- sorting, selection, indexing ----------------------------------------------------------------

def test_topk_and_sort():
    topk = named_cost("aten::topk", self=T(64, 1000, dtype="bf16"), k=8, dim=-1)
    assert topk.flops == 0
    assert topk.bytes == 64 * 1000 * 2 + 64 * 8 * (2 + 8)  # k values and int64 indices per row
    sort = named_cost("aten::sort", self=T(64, 1000), dim=1)
    assert sort.min_bytes == 64 * 1000 * 4 + 64 * 1000 * (4 + 8)  # the minimum: read once, values and indices written
    assert sort.bytes == 2 * 64 * 1000 * (4 + 8)  # what runs: values and indices sorted in place, read and written
    argsort = named_cost("aten::argsort", self=T(64, 1000), dim=1)
    assert argsort.min_bytes == 64 * 1000 * 4 + 64 * 1000 * 8
    assert argsort.bytes == sort.bytes  # the keys are sorted too, into a scratch copy


def test_index_add_and_scatter_add_accumulate():
    c = named_cost("aten::index_add_", self=T(1000, 64), dim=0, index=T(300, dtype="int64"), source=T(300, 64))
    assert c.flops == 300 * 64
    assert c.bytes == 300 * 8 + 300 * 64 * 4 + 2 * 300 * 64 * 4  # index, source; targets read and written
    scatter = named_cost("aten::scatter_add_", self=T(16, 32), dim=1, index=T(16, 4, dtype="int64"), src=T(16, 4))
    assert scatter.bytes == 16 * 4 * 8 + 16 * 4 * 4 + 2 * 16 * 4 * 4  # targets read too (was: written only)


def test_gather_reads_an_expanded_index_once():
    """index_select on CUDA gathers through an index expanded along the row (stride 0): the
    kernel reads one index per row. The old formula counted the expanded numel, and a real GPT-2
    embedding's gather showed 185% of its roof."""
    index = T(2048, 768, dtype="int64", strides=(1, 0))
    c = named_cost("aten::gather", self=T(50257, 768), dim=0, index=index)
    assert c.bytes == 2048 * 8 + 2 * 2048 * 768 * 4


@pytest.mark.parametrize(("shape", "indices", "expected"), [
    ((5, 6, 7), [None, (3,)], (5, 3, 7)),  # x[:, idx]
    ((5, 6, 7), [(3,)], (3, 6, 7)),  # x[idx]
    ((5, 6, 7), [(2, 3), (3,)], (2, 3, 7)),  # x[a, b], broadcast together
    ((5, 6, 7), [(4,), None, (4,)], (4, 6)),  # non-adjacent: index dims first
    ((5, 6, 7, 8), [None, (2, 1), (1, 3)], (5, 2, 3, 8)),  # adjacent after a slice: in place
])
def test_advanced_index_shape(shape, indices, expected):
    entries = [T(*s, dtype="int64") if s is not None else None for s in indices]
    assert advanced_index_shape(shape, entries) == (expected, True)


def test_index_with_slice_first():
    """x[:, idx] with x [100, 1000, 32]: 100 x 3 rows of 32 selected. The old formula assumed the
    index addressed the leading dim: 3 x 1000 x 32, 10x too many bytes here."""
    c = named_cost("aten::index.Tensor", self=T(100, 1000, 32), indices=[None, T(3, dtype="int64")])
    assert c.bytes == 3 * 8 + 2 * 100 * 3 * 32 * 4


def test_index_from_the_restride_view_hint():
    # what the profiler records for x[:, idx]: no indices; the as_strided child has the output shape
    call = named("aten::index.Tensor", self=T(100, 1000, 32))
    call = OpCall(call.name, call.args, signature=call.signature, hints=(("index_view", ((100, 3, 32), (32000, 0, 1))),))
    cost, _ = explain_cost(call)
    assert cost.bytes == 3 * 8 + 2 * 100 * 3 * 32 * 4
    cost, why = explain_cost(named("aten::index.Tensor", self=T(100, 1000, 32)))
    assert cost is None and "no index tensors" in why
