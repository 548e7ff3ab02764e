"""Cost formulas for GEMMs and convolutions, on hand-built OpCalls.

Each expected value carries its arithmetic: FMA = 2 FLOPs; bytes = each input storage read once
plus each output written once.
"""

from __future__ import annotations

import pytest
from cost_helpers import T, cost

from rooflinectl.costs.conv import conv_out_shape

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
    # by hand: output [2, 16, 16, 16] ((32 + 2 - 3) // 2 + 1 = 16); FLOPs 2 x N x Cout x Ho x Wo x Cin x kh x kw
    assert c.flops == 2 * 2 * 16 * 16 * 16 * 3 * 3 * 3
    # input, weight and bias read once, output written once (fp32)
    assert c.bytes == 4 * (2 * 3 * 32 * 32 + 16 * 3 * 3 * 3 + 16 + 2 * 16 * 16 * 16)
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
GRAD_OUT, X, W = 2 * 16 * 16 * 16 * 4, 2 * 3 * 32 * 32 * 4, 16 * 3 * 3 * 3 * 4  # bytes


@pytest.mark.parametrize(("mask", "flops", "nbytes"), [
    # grad_input and grad_weight each cost one forward's FLOPs; each is written once; grad_input
    # needs grad_out and the weight, grad_weight grad_out and the input; grad_bias writes [Cout]
    ([True, True, True], 2 * CONV_FWD_FLOPS, GRAD_OUT + X + W + X + W + 16 * 4),
    ([True, False, False], CONV_FWD_FLOPS, GRAD_OUT + W + X),
    ([False, True, True], CONV_FWD_FLOPS, GRAD_OUT + X + W + 16 * 4),
])
def test_convolution_backward(mask, flops, nbytes):
    g, x, w = T(2, 16, 16, 16), T(2, 3, 32, 32), T(16, 3, 3, 3)
    # (grad_out, input, weight, bias_sizes, stride, padding, dilation, transposed, output_padding,
    #  groups, output_mask)
    c = cost("aten::convolution_backward", g, x, w, [16], [2, 2], [1, 1], [1, 1], False, [0, 0], 1, mask)
    assert c.flops == flops
    assert c.bytes == nbytes
    assert c.family == "conv"


@pytest.mark.parametrize(("channels", "groups", "per_group_in"), [(64, 64, 1), (64, 4, 16), (32, 1, 32)])
def test_grouped_convolution_backward_counts_groups(channels, groups, per_group_in):
    """Depthwise and grouped convolutions: grad_weight costs one forward too. flop_counter's
    conv_backward_flop (the old formula) counts grad_weight `groups` times too many: 32x here for
    a 64-channel depthwise conv."""
    x, w, g = T(8, channels, 28, 28), T(channels, per_group_in, 3, 3), T(8, channels, 28, 28)
    forward = 2 * (8 * channels * 28 * 28) * (per_group_in * 3 * 3)  # 2 * out elements * Cin/g*kh*kw
    c = cost("aten::convolution_backward", g, x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], groups,
             [True, True, False])
    assert c.flops == 2 * forward
    transposed = cost("aten::convolution_backward", T(8, channels, 56, 56), x, T(channels, per_group_in, 2, 2),
                      None, [2, 2], [0, 0], [1, 1], True, [0, 0], groups, [True, True, False])
    # transposed: every input element meets (Cout/g) x kernel weights
    assert transposed.flops == 2 * (2 * (8 * channels * 28 * 28) * (per_group_in * 2 * 2))
