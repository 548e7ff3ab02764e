"""Cost formulas for GEMMs, convolutions and attention, on hand-built OpCalls.

Each expected value carries its arithmetic: FMA = 2 FLOPs; bytes = each input storage read once
plus each output written once.
"""

from __future__ import annotations

import pytest
from cost_helpers import T, cost

from rooflinectl.costs import OpCall, cost_of
from rooflinectl.costs.linalg import conv_out_shape

# --- GEMM ----------------------------------------------------------------------------------------

def test_mm():
    c = cost("aten::mm", T(64, 256), T(256, 128))
    assert c.flops == 2 * 64 * 128 * 256  # 2*M*N*K
    assert c.bytes == (64 * 256 + 256 * 128 + 64 * 128) * 4  # A + B read, C [M, N] written, fp32
    assert (c.family, c.dtype) == ("gemm", "fp32")


def test_mm_bf16_itemsize():
    c = cost("aten::mm", T(32, 16, dtype="bf16"), T(16, 8, dtype="bf16"))
    assert c.flops == 2 * 32 * 8 * 16  # 2*M*N*K
    assert c.bytes == (32 * 16 + 16 * 8 + 32 * 8) * 2  # bf16: 2 bytes per element
    assert c.dtype == "bf16"


def test_mm_operands_sharing_storage_read_once():
    # a @ a.T: both operands view one [64, 64] storage.
    a = T(64, 64, strides=(64, 1), storage=1000)
    at = T(64, 64, strides=(1, 64), storage=1000)
    c = cost("aten::mm", a, at)
    assert c.flops == 2 * 64 * 64 * 64  # 2*M*N*K
    assert c.bytes == 64 * 64 * 4 + 64 * 64 * 4  # the shared storage read once + C written


def test_addmm():
    c = cost("aten::addmm", T(128), T(64, 256), T(256, 128), 1, 1)
    assert c.flops == 2 * 64 * 128 * 256  # 2*M*N*K, bias add not counted
    assert c.bytes == (128 + 64 * 256 + 256 * 128 + 64 * 128) * 4  # bias + A + B read, C written
    assert c.family == "gemm"


def test_addmm_expanded_bias_reads_its_source_only():
    bias = T(64, 128, strides=(0, 1))  # a [128] bias broadcast over the rows
    c = cost("aten::addmm", bias, T(64, 256), T(256, 128))
    assert c.bytes == (128 + 64 * 256 + 256 * 128 + 64 * 128) * 4  # stride-0 bias: 128 elements read


def test_bmm():
    c = cost("aten::bmm", T(8, 32, 64, dtype="bf16"), T(8, 64, 16, dtype="bf16"))
    assert c.flops == 2 * 8 * 32 * 16 * 64  # 2*B*M*N*K
    assert c.bytes == (8 * 32 * 64 + 8 * 64 * 16 + 8 * 32 * 16) * 2  # A + B + C [B, M, N], bf16


def test_baddbmm():
    c = cost("aten::baddbmm", T(8, 32, 16), T(8, 32, 64), T(8, 64, 16), 1, 1)
    assert c.flops == 2 * 8 * 32 * 16 * 64  # 2*B*M*N*K
    assert c.bytes == (8 * 32 * 16 + 8 * 32 * 64 + 8 * 64 * 16 + 8 * 32 * 16) * 4  # self + A + B + C


def test_scaled_mm_out_dtype_code():
    a = T(64, 128, dtype="fp8")
    b = T(128, 32, dtype="fp8", strides=(1, 128))  # column-major, as _scaled_mm wants
    scale_a, scale_b = T(), T()
    # (self, mat2, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum); 15 = bf16
    c = cost("aten::_scaled_mm", a, b, scale_a, scale_b, None, None, 15, False)
    assert c.flops == 2 * 64 * 32 * 128  # 2*M*N*K
    assert c.bytes == 64 * 128 + 128 * 32 + 4 + 4 + 64 * 32 * 2  # fp8 A, B, two fp32 scales; bf16 C
    assert (c.family, c.dtype) == ("gemm", "fp8")


def test_scaled_mm_default_out_dtype_is_inputs():
    c = cost("aten::_scaled_mm", T(64, 128, dtype="fp8"), T(128, 32, dtype="fp8"), T(), T())
    assert c.bytes == 64 * 128 + 128 * 32 + 4 + 4 + 64 * 32 * 1  # no out_dtype: C in A's fp8


def test_int_mm_int32_output():
    c = cost("aten::_int_mm", T(32, 64, dtype="int8"), T(64, 16, dtype="int8"))
    assert c.flops == 2 * 32 * 16 * 64  # 2*M*N*K integer ops
    assert c.bytes == 32 * 64 + 64 * 16 + 32 * 16 * 4  # int8 A, B; int32 C
    assert c.dtype == "int8"


# --- convolution ---------------------------------------------------------------------------------

def test_convolution_stride_padding_bias():
    # (input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
    c = cost("aten::convolution", T(2, 3, 32, 32), T(16, 3, 3, 3), T(16), [2, 2], [1, 1], [1, 1],
             False, [0, 0], 1)
    # out H = W = (32 + 2*1 - 1*(3-1) - 1) // 2 + 1 = 16
    assert c.flops == 2 * (2 * 16 * 16 * 16) * (3 * 3 * 3)  # 2 * out elements * (Cin*kh*kw)
    assert c.bytes == (2 * 3 * 32 * 32 + 16 * 3 * 3 * 3 + 16 + 2 * 16 * 16 * 16) * 4  # x, w, b, out
    assert (c.family, c.dtype) == ("conv", "fp32")


def test_convolution_dilation_groups():
    c = cost("aten::convolution", T(1, 8, 10, 10), T(16, 2, 3, 3), None, [1, 1], [0, 0], [2, 2],
             False, [0, 0], 4)
    # out H = W = (10 - 2*(3-1) - 1) // 1 + 1 = 6; per group Cin/groups = 2 input channels
    assert c.flops == 2 * (1 * 16 * 6 * 6) * (2 * 3 * 3)  # 2 * out elements * (Cin/g*kh*kw)
    assert c.bytes == (8 * 10 * 10 + 16 * 2 * 3 * 3 + 16 * 6 * 6) * 4  # x, w, out; no bias


def test_convolution_transposed_out_shape():
    # weight (Cin, Cout/groups, kh, kw) for a transposed conv
    c = cost("aten::convolution", T(1, 4, 5, 5), T(4, 6, 3, 3), None, [2, 2], [1, 1], [1, 1],
             True, [1, 1], 1)
    # out H = W = (5-1)*2 - 2*1 + 1*(3-1) + 1 (output_padding) + 1 = 10
    assert c.flops == 2 * (1 * 5 * 5) * 4 * 6 * (3 * 3)  # 2 * N*Hin*Win * Cin * Cout * kh*kw
    assert c.bytes == (4 * 5 * 5 + 4 * 6 * 3 * 3 + 6 * 10 * 10) * 4  # x, w, out [1, 6, 10, 10]


def test_conv_out_shape_cases():
    # plain 2-d: (8 + 2*1 - 1*(3-1) - 1) // 1 + 1 = 8
    assert conv_out_shape((2, 3, 8, 8), (5, 3, 3, 3), [1, 1], [1, 1], [1, 1], False, [0, 0], 1) == (2, 5, 8, 8)
    # a single stride/padding value for every spatial dim, 3-d: (9 + 0 - 2 - 1) // 2 + 1 = 4
    assert conv_out_shape((1, 2, 9, 9, 9), (4, 2, 3, 3, 3), [2], [0], [1], False, [0], 1) == (1, 4, 4, 4, 4)
    # transposed with groups: out channels = w[1] * groups = 3 * 2
    assert conv_out_shape((1, 4, 5, 5), (4, 3, 3, 3), [2, 2], [1, 1], [1, 1], True, [1, 1], 2) == (1, 6, 10, 10)
    # 1-d, stride 3, dilation 2: (20 + 2*2 - 2*(4-1) - 1) // 3 + 1 = 6
    assert conv_out_shape((1, 1, 20), (1, 1, 4), [3], [2], [2], False, [0], 1) == (1, 1, 6)


def test_underscore_convolution_same_positions():
    args = (T(2, 3, 32, 32), T(16, 3, 3, 3), T(16), [2, 2], [1, 1], [1, 1], False, [0, 0], 1)
    c = cost("aten::_convolution", *args, False, False, True, True)  # + benchmark, deterministic, ...
    assert c == cost("aten::convolution", *args)


def test_cudnn_convolution_padding_before_stride():
    # (input, weight, padding, stride, dilation, groups, benchmark, deterministic, allow_tf32)
    c = cost("aten::cudnn_convolution", T(1, 3, 8, 8), T(4, 3, 3, 3), [2, 2], [1, 1], [1, 1], 1,
             False, False, True)
    # padding 2, stride 1: out = (8 + 4 - 2 - 1) // 1 + 1 = 10 (swapped would give 4)
    assert c.flops == 2 * (1 * 4 * 10 * 10) * (3 * 3 * 3)  # 2 * out elements * Cin*kh*kw
    assert c.bytes == (3 * 8 * 8 + 4 * 3 * 3 * 3 + 4 * 10 * 10) * 4  # x, w, out; no bias argument


def test_mkldnn_convolution_padding_before_stride():
    # (input, weight, bias, padding, stride, dilation, groups)
    c = cost("aten::mkldnn_convolution", T(1, 3, 8, 8), T(4, 3, 3, 3), T(4), [2, 2], [1, 1], [1, 1], 1)
    assert c.flops == 2 * (1 * 4 * 10 * 10) * (3 * 3 * 3)  # out 10x10 as above
    assert c.bytes == (3 * 8 * 8 + 4 * 3 * 3 * 3 + 4 + 4 * 10 * 10) * 4  # x, w, bias, out


CONV_FWD_FLOPS = 2 * (2 * 16 * 16 * 16) * (3 * 3 * 3)  # the forward of test_convolution_stride_padding_bias


@pytest.mark.parametrize(("mask", "flops", "written"), [
    # grad_input and grad_weight each cost one forward's FLOPs; each is written once
    ([True, True, True], 2 * CONV_FWD_FLOPS, (2 * 3 * 32 * 32 + 16 * 3 * 3 * 3) * 4),
    ([True, False, False], CONV_FWD_FLOPS, 2 * 3 * 32 * 32 * 4),
    ([False, True, True], CONV_FWD_FLOPS, 16 * 3 * 3 * 3 * 4),
])
def test_convolution_backward(mask, flops, written):
    g, x, w = T(2, 16, 16, 16), T(2, 3, 32, 32), T(16, 3, 3, 3)
    # (grad_out, input, weight, bias_sizes, stride, padding, dilation, transposed, output_padding,
    #  groups, output_mask)
    c = cost("aten::convolution_backward", g, x, w, [16], [2, 2], [1, 1], [1, 1], False, [0, 0], 1, mask)
    assert c.flops == flops
    reads = (2 * 16 * 16 * 16 + 2 * 3 * 32 * 32 + 16 * 3 * 3 * 3) * 4  # grad_out, input, weight
    assert c.bytes == reads + written
    assert c.family == "conv"


# --- attention -----------------------------------------------------------------------------------

B, H, SQ, SK, D = 2, 8, 128, 256, 64
ATTN_FLOPS = 4 * B * H * SQ * SK * D  # Q@K^T and P@V: 2 * (2*B*H*Sq*Sk*D)
# q, k, v read (bf16), out (B, H, Sq, D) bf16 and fp32 log-sum-exp (B, H, Sq) written
ATTN_BYTES = (B * H * SQ * D + 2 * B * H * SK * D) * 2 + B * H * SQ * D * 2 + B * H * SQ * 4


def qkv_bhsd():
    return T(B, H, SQ, D, dtype="bf16"), T(B, H, SK, D, dtype="bf16"), T(B, H, SK, D, dtype="bf16")


def qkv_bshd():
    return T(B, SQ, H, D, dtype="bf16"), T(B, SK, H, D, dtype="bf16"), T(B, SK, H, D, dtype="bf16")


@pytest.mark.parametrize("name", ["aten::_scaled_dot_product_flash_attention",
                                  "aten::_scaled_dot_product_flash_attention_for_cpu"])
@pytest.mark.parametrize(("causal", "flops"), [(False, ATTN_FLOPS), (True, ATTN_FLOPS // 2)])
def test_sdpa_flash(name, causal, flops):
    # (query, key, value, dropout_p, is_causal, return_debug_mask)
    c = cost(name, *qkv_bhsd(), 0.0, causal, False)
    assert c.flops == flops  # causal: half the score/value FLOPs
    assert c.bytes == ATTN_BYTES
    assert (c.family, c.dtype) == ("attention", "bf16")


@pytest.mark.parametrize("name", ["aten::_scaled_dot_product_efficient_attention",
                                  "aten::_scaled_dot_product_cudnn_attention"])
def test_sdpa_efficient_causal_is_seventh_argument(name):
    # (query, key, value, attn_bias, compute_log_sumexp, dropout_p, is_causal)
    causal = cost(name, *qkv_bhsd(), None, False, 0.0, True)
    full = cost(name, *qkv_bhsd(), None, True, 0.0, False)  # compute_log_sumexp is not is_causal
    assert full.flops == ATTN_FLOPS  # 4*B*H*Sq*Sk*D
    assert causal.flops == ATTN_FLOPS // 2  # causal halves it
    assert full.bytes == causal.bytes == ATTN_BYTES


def test_flash_attention_forward_bshd_layout():
    # (query, key, value, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal, return_debug_mask)
    c = cost("aten::_flash_attention_forward", *qkv_bshd(), None, None, SQ, SK, 0.0, True, False)
    assert c.flops == ATTN_FLOPS // 2  # (B, S, H, D) read as (B, H, S, D); causal halves
    assert c.bytes == ATTN_BYTES
    full = cost("aten::_flash_attention_forward", *qkv_bshd(), None, None, SQ, SK, 0.0, False, False)
    assert full.flops == ATTN_FLOPS


def test_flash_attention_forward_variable_length_not_modelled():
    q, k, v = qkv_bshd()
    call = OpCall("aten::_flash_attention_forward", (q, k, v, T(3, dtype="int32"), T(3, dtype="int32"),
                                                      SQ, SK, 0.0, False, False))
    assert cost_of(call) is None


def test_efficient_attention_forward_custom_mask_type():
    # (query, key, value, bias, cu_seqlens_q, cu_seqlens_k, max_q, max_k, dropout_p,
    #  custom_mask_type, compute_log_sumexp)
    causal = cost("aten::_efficient_attention_forward", *qkv_bshd(), None, None, None, SQ, SK, 0.0, 1, True)
    full = cost("aten::_efficient_attention_forward", *qkv_bshd(), None, None, None, SQ, SK, 0.0, 0, True)
    assert causal.flops == ATTN_FLOPS // 2  # custom_mask_type 1: causal from the top left
    assert full.flops == ATTN_FLOPS
    assert full.bytes == ATTN_BYTES


@pytest.mark.parametrize("name", ["aten::_scaled_dot_product_flash_attention_backward",
                                  "aten::_scaled_dot_product_efficient_attention_backward",
                                  "aten::_scaled_dot_product_cudnn_attention_backward"])
def test_attention_backward(name):
    q, k, v = qkv_bhsd()
    grad_out, out, lse = T(B, H, SQ, D, dtype="bf16"), T(B, H, SQ, D, dtype="bf16"), T(B, H, SQ)
    c = cost(name, grad_out, q, k, v, out, lse)
    # recompute Q@K^T, dP = dO@V^T, dV = P^T@dO, dQ = dS@K, dK = dS^T@Q: 5 GEMMs of 2*B*H*Sq*Sk*D
    assert c.flops == 5 * 2 * B * H * SQ * SK * D
    reads = (2 * B * H * SQ * D + B * H * SQ * D + 2 * B * H * SK * D) * 2  # dO, out, q, k, v
    written = (B * H * SQ * D + 2 * B * H * SK * D) * 2  # dq, dk, dv
    assert c.bytes == reads + written
    assert c.family == "attention"
