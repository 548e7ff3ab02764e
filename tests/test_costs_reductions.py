"""Reductions, softmax, normalisations and losses: one read of the input, smaller outputs written."""

from __future__ import annotations

import pytest
from cost_helpers import T, cost

X = (8, 16, 32)
NX = 8 * 16 * 32  # elements of X




# --- reductions ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("dims", "keepdim", "out_numel"), [
    ([1], False, 8 * 32),  # reduce the 16: [8, 32]
    ([0, 2], True, 16),  # dim list, keepdim: [1, 16, 1]
    ([-1], False, 8 * 16),  # negative dim
    ([1], False, 8 * 32),  # a single dim (the profiler records int[1] as a list)
    ([], False, 1),  # empty list: full reduction
    (None, False, 1),  # no dims: full reduction
])
def test_sum_dims(dims, keepdim, out_numel):
    c = cost("aten::sum", T(*X), dims, keepdim, None)
    assert c.flops == NX  # 1 add per input element
    assert c.bytes == NX * 4 + out_numel * 4  # input read once, reduced output written
    assert (c.family, c.dtype) == ("reduction", "fp32")


def test_sum_full_reduction_no_dim_argument():
    c = cost("aten::sum", T(*X))  # sum(x): only self recorded
    assert c.bytes == NX * 4 + 4  # one fp32 value written


def test_sum_dtype_code_in_dim_position_is_full_reduction():
    c = cost("aten::sum", T(*X), 6)  # sum(x, dtype=float32): the code 6 is out of range as a dim
    assert c.bytes == NX * 4 + 4


def test_reduction_of_expanded_input_reads_source():
    c = cost("aten::sum", T(8, 32, strides=(0, 1)), [0], False)  # a [32] row expanded to [8, 32]
    assert c.flops == 8 * 32
    assert c.bytes == 32 * 4 + 32 * 4  # source row read, [32] output written


@pytest.mark.parametrize(("name", "flops_per_element"), [
    ("aten::mean", 1), ("aten::amax", 0), ("aten::any", 0), ("aten::logsumexp", 3),
    ("aten::var", 3), ("aten::std", 3),
])
def test_reduction_families(name, flops_per_element):
    c = cost(name, T(*X), [2], False)
    assert c.flops == flops_per_element * NX
    assert c.bytes == NX * 4 + 8 * 16 * 4  # [8, 16] result


def test_argmax_int64_output():
    c = cost("aten::argmax", T(*X, dtype="bf16"), 1, False)
    assert c.flops == 0
    assert c.bytes == NX * 2 + 8 * 32 * 8  # bf16 input; int64 indices [8, 32]
    full = cost("aten::argmax", T(*X, dtype="bf16"), None, False)
    assert full.bytes == NX * 2 + 8  # one int64 index


def test_max_dim_values_and_int64_indices():
    c = cost("aten::max", T(*X), 1, False)
    assert c.flops == 0
    assert c.bytes == NX * 4 + 8 * 32 * (4 + 8)  # fp32 values and int64 indices, [8, 32] each


def test_max_full_reduction_one_value():
    c = cost("aten::min", T(*X))
    assert c.bytes == NX * 4 + 4  # one fp32 value, no indices


def test_var_mean_two_outputs():
    c = cost("aten::var_mean", T(*X), [1], 1, False)  # (self, dim, correction, keepdim)
    assert c.flops == 4 * NX  # mean, subtract, square, add
    assert c.bytes == NX * 4 + 2 * (8 * 32) * 4  # var and mean, [8, 32] each


@pytest.mark.parametrize("name", ["aten::linalg_vector_norm", "aten::norm"])
def test_vector_norm_dims_are_third_argument(name):
    c = cost(name, T(*X), 2, [1], False, None)  # (self, ord, dim, keepdim, dtype)
    assert c.flops == 2 * NX  # square, add
    assert c.bytes == NX * 4 + 8 * 32 * 4  # dim 1 reduced (ord=2 is not a dim)
    full = cost(name, T(*X), 2, None, False, None)
    assert full.bytes == NX * 4 + 4


def test_cumsum():
    c = cost("aten::cumsum", T(*X), 1, None)
    assert c.flops == NX  # 1 add per element
    assert c.bytes == 2 * NX * 4  # read once, same-size output written


# --- softmax -------------------------------------------------------------------------------------

def test_softmax_half_to_float():
    x = T(16, 128, dtype="fp16")
    c = cost("aten::_softmax", x, -1, True)
    assert c.flops == 4 * 16 * 128  # max, exp, sum, divide
    assert c.bytes == 16 * 128 * 2 + 16 * 128 * 4  # fp16 read, fp32 written (half_to_float)
    same = cost("aten::_log_softmax", x, -1, False)
    assert same.bytes == 2 * 16 * 128 * 2  # fp16 in, fp16 out
    assert same.family == "softmax"


def test_softmax_dtype_code():
    x = T(16, 128, dtype="fp16")
    c = cost("aten::softmax", x, 1, 6)  # softmax(x, dim, dtype=torch.float32): code 6
    assert c.bytes == 16 * 128 * 2 + 16 * 128 * 4  # fp16 read, fp32 written
    plain = cost("aten::log_softmax", x, 1, None)
    assert plain.bytes == 2 * 16 * 128 * 2  # no dtype: output in the input's dtype


def test_softmax_backward():
    c = cost("aten::_softmax_backward_data", T(16, 128), T(16, 128), -1, 6)
    assert c.flops == 3 * 16 * 128
    assert c.bytes == 3 * 16 * 128 * 4  # grad and output read, grad_input written


# --- normalisation -------------------------------------------------------------------------------

def test_layer_norm():
    x, w, b = T(8, 128, 512, dtype="bf16"), T(512, dtype="bf16"), T(512, dtype="bf16")
    c = cost("aten::native_layer_norm", x, [512], w, b, 1e-5)
    n = 8 * 128 * 512
    assert c.flops == 8 * n  # 8 FLOP per element
    # x, w, b read; y written; fp32 mean and rstd per row (8*128 rows)
    assert c.bytes == n * 2 + 512 * 2 * 2 + n * 2 + 2 * (8 * 128) * 4
    assert (c.family, c.dtype) == ("norm", "bf16")


def test_layer_norm_two_normalised_dims_no_affine():
    c = cost("aten::layer_norm", T(8, 128, 512), [128, 512], None, None, 1e-5, True)
    n = 8 * 128 * 512
    assert c.bytes == n * 4 + n * 4 + 2 * 8 * 4  # 8 rows of 128*512: 8 means, 8 rstds


def test_layer_norm_backward():
    g, x = T(8, 128, 512), T(8, 128, 512)
    mean, rstd, w, b = T(8, 128, 1), T(8, 128, 1), T(512), T(512)
    c = cost("aten::native_layer_norm_backward", g, x, [512], mean, rstd, w, b, [True, True, True])
    n = 8 * 128 * 512
    assert c.flops == 10 * n
    reads = (n + n + 8 * 128 + 8 * 128 + 512) * 4  # grad, x, mean, rstd, weight
    written = n * 4 + 2 * 512 * 4  # grad_input, grad_weight, grad_bias
    assert c.bytes == reads + written


@pytest.mark.parametrize("name", ["aten::_fused_rms_norm", "aten::rms_norm"])
def test_rms_norm(name):
    c = cost(name, T(4, 256, 1024, dtype="bf16"), [1024], T(1024, dtype="bf16"), None)
    n = 4 * 256 * 1024
    assert c.flops == 4 * n  # square, add, scale, weight
    assert c.bytes == n * 2 + 1024 * 2 + n * 2 + 4 * 256 * 4  # x, w read; y, fp32 rstd per row written


def test_batch_norm():
    x = T(4, 16, 8, 8)
    c = cost("aten::native_batch_norm", x, T(16), T(16), T(16), T(16), True, 0.1, 1e-5)
    n = 4 * 16 * 8 * 8
    assert c.flops == 6 * n
    assert c.bytes == n * 4 + 4 * 16 * 4 + n * 4  # x, weight, bias, running mean/var read; y written
    no_affine = cost("aten::_native_batch_norm_legit", x, None, None, T(16), T(16), True, 0.1, 1e-5)
    assert no_affine.bytes == n * 4 + 2 * 16 * 4 + n * 4  # only the running stats


def test_group_norm():
    # (input, weight, bias, N, C, HxW, group, eps)
    c = cost("aten::native_group_norm", T(4, 16, 8, 8), T(16), T(16), 4, 16, 64, 4, 1e-5)
    n = 4 * 16 * 8 * 8
    assert c.flops == 8 * n
    # x, weight, bias read; y and the mean and rstd per (sample, group) written
    assert c.bytes == n * 4 + 2 * 16 * 4 + n * 4 + 2 * 4 * 4 * 4


# --- losses --------------------------------------------------------------------------------------

def test_nll_loss_forward():
    # (self, target, weight, reduction, ignore_index)
    c = cost("aten::nll_loss_forward", T(32, 1000), T(32, dtype="int64"), None, 1, -100)
    assert c.flops == 32  # one per target
    assert c.bytes == 32 * 8 + 32 * 4 + 2 * 4  # targets, the picked log-probs; loss and total_weight
    assert c.family == "loss"


def test_nll_loss_backward():
    # (grad_output, self, target, weight, reduction, ignore_index, total_weight)
    c = cost("aten::nll_loss_backward", T(), T(32, 1000), T(32, dtype="int64"), None, 1, -100, T())
    assert c.flops == 32
    # targets and the 0-dim grad read, one grad_input element per target written; the zero fill
    # of grad_input is its own op (the old formula counted all 32x1000 here as well)
    assert c.bytes == 32 * 8 + 4 + 32 * 4


@pytest.mark.parametrize(("reduction", "written"), [(1, 4), (2, 4), (0, 32 * 64 * 4)])
def test_mse_loss(reduction, written):
    c = cost("aten::mse_loss", T(32, 64), T(32, 64), reduction)
    assert c.flops == 3 * 32 * 64  # subtract, square, add
    assert c.bytes == 2 * 32 * 64 * 4 + written  # self, target read; scalar or per-element loss


def test_bce_with_logits():
    # (self, target, weight, pos_weight, reduction)
    c = cost("aten::binary_cross_entropy_with_logits", T(32, 64), T(32, 64), None, T(64), 1)
    assert c.flops == 6 * 32 * 64
    assert c.bytes == (2 * 32 * 64 + 64) * 4 + 4  # self, target, pos_weight read; one value written
    none = cost("aten::binary_cross_entropy_with_logits", T(32, 64), T(32, 64), None, None, 0)
    assert none.bytes == 2 * 32 * 64 * 4 + 32 * 64 * 4  # reduction none: per-element loss written


def test_bce():
    # (self, target, weight, reduction)
    c = cost("aten::binary_cross_entropy", T(32, 64), T(32, 64), T(32, 64), 1)
    assert c.flops == 6 * 32 * 64
    assert c.bytes == 3 * 32 * 64 * 4 + 4  # self, target, weight read; mean written
