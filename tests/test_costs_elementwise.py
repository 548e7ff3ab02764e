"""Element-wise cost formulas: FLOPs per output element, inputs read once, output written once."""

from __future__ import annotations

import pytest
from cost_helpers import T, cost

from rooflinectl.costs import OpCall, cost_of

N = 32 * 64  # elements of the usual [32, 64] operand




@pytest.mark.parametrize(("name", "flops_per_element"), [
    ("aten::exp", 1), ("aten::rsqrt", 1), ("aten::tanh_", 1), ("aten::gelu", 5), ("aten::silu", 4),
    ("aten::mish", 6), ("aten::softplus", 3), ("aten::hardswish", 3), ("aten::leaky_relu", 1),
    ("aten::relu", 0), ("aten::abs", 0), ("aten::clamp", 0),
])
def test_unary(name, flops_per_element):
    c = cost(name, T(32, 64))
    assert c.flops == flops_per_element * N  # FLOP/element * 32*64
    assert c.bytes == N * 4 + N * 4  # x read, out written (fp32)
    assert (c.family, c.dtype) == ("elementwise", "fp32")


def test_unary_half():
    c = cost("aten::sigmoid", T(32, 64, dtype="bf16"))
    assert c.flops == N  # 1 FLOP/element
    assert c.bytes == 2 * N * 2  # read + write, bf16
    assert c.dtype == "bf16"


def test_binary_same_shape():
    c = cost("aten::mul", T(32, 64), T(32, 64))
    assert c.flops == N  # 1 FLOP per output element
    assert c.bytes == (N + N + N) * 4  # a, b read, out written


def test_binary_broadcast_row_vector():
    c = cost("aten::add", T(32, 64), T(64), 1)
    assert c.flops == N  # output has the broadcast shape [32, 64]
    assert c.bytes == (N + 64 + N) * 4  # a, the [64] vector read once, out [32, 64] written


def test_binary_broadcast_outer():
    c = cost("aten::sub", T(32, 1), T(1, 64), 1)
    assert c.flops == 32 * 64  # broadcast(32x1, 1x64) = 32x64
    assert c.bytes == (32 + 64 + 32 * 64) * 4  # two small inputs, the full output


def test_binary_expanded_stride0_input_reads_source_only():
    expanded = T(32, 64, strides=(1, 0))  # a [32, 1] column expanded to [32, 64]
    c = cost("aten::mul", expanded, T(32, 64))
    assert c.flops == N
    assert c.bytes == (32 + N + N) * 4  # expanded operand: its 32-element source only


def test_shared_storage_read_once():
    x = T(32, 64, strides=(64, 1), storage=0xABC)
    c = cost("aten::add", x, x, 1)  # x + x
    assert c.flops == N
    assert c.bytes == N * 4 + N * 4  # x read once (one storage), out written once


def test_without_storage_pointers_inputs_are_distinct():
    c = cost("aten::add", T(32, 64), T(32, 64), 1)
    assert c.bytes == 3 * N * 4  # no pointers: two reads, one write


def test_inplace_writes_self():
    c = cost("aten::add_", T(32, 64, dtype="bf16"), T(32, 64), 1)  # bf16 self += fp32 other
    assert c.flops == N
    assert c.bytes == N * 2 + N * 4 + N * 2  # self (bf16) and other (fp32) read, self written (bf16)


def test_inplace_unary():
    c = cost("aten::relu_", T(32, 64))
    assert c.flops == 0  # relu: a select, no FLOP
    assert c.bytes == 2 * N * 4  # self read and written


def test_out_argument_sets_written_size():
    # torch.add(a, b, out=y): the tensor past the op's inputs is the out= tensor
    c = cost("aten::add", T(32, 64), T(32, 64), 1, T(32, 64, dtype="bf16"))
    assert c.flops == N
    assert c.bytes == (N + N) * 4 + N * 2  # fp32 inputs read, bf16 out written


def test_mixed_dtypes_write_the_promoted_dtype():
    c = cost("aten::mul", T(32, 64, dtype="bf16"), T(32, 64))
    assert c.bytes == N * 2 + N * 4 + N * 4  # bf16 * fp32 -> fp32 output


def test_zero_dim_operand_does_not_promote():
    c = cost("aten::mul", T(32, 64, dtype="bf16"), T(dtype="fp32"))  # x * wrapped scalar
    assert c.bytes == N * 2 + 4 + N * 2  # output stays bf16


@pytest.mark.parametrize("name", ["aten::eq", "aten::lt", "aten::logical_and"])
def test_bool_output(name):
    c = cost(name, T(32, 64), T(32, 64))
    assert c.flops == 0  # comparisons: no FLOP
    assert c.bytes == 2 * N * 4 + N * 1  # two fp32 reads, one bool (1 byte) write
    assert c.dtype == "fp32"


def test_bool_output_unary():
    c = cost("aten::isnan", T(32, 64))
    assert c.bytes == N * 4 + N * 1  # one fp32 read, bool written


def test_bool_output_with_scalar():
    c = cost("aten::gt", T(32, 64, dtype="fp16"), 0)
    assert c.bytes == N * 2 + N * 1  # fp16 read, bool written


def test_ternary_addcmul_inplace():
    c = cost("aten::addcmul_", T(32, 64), T(32, 64), T(64), 0.5)
    assert c.flops == 2 * N  # mul + add per element
    assert c.bytes == (N + N + 64) * 4 + N * 4  # three inputs read, self written


def test_lerp_broadcast_weight():
    c = cost("aten::lerp", T(32, 64), T(32, 64), T(32, 1))
    assert c.flops == 2 * N
    assert c.bytes == (N + N + 32 + N) * 4  # start, end, [32, 1] weight read, out written


def test_where_writes_value_dtype_not_bool():
    c = cost("aten::where", T(32, 64, dtype="bool"), T(32, 64), T(64))
    assert c.flops == 0
    assert c.bytes == (N * 1 + N * 4 + 64 * 4) + N * 4  # cond, x, y read; fp32 out written
    assert c.dtype == "fp32"


def test_masked_fill_inplace():
    c = cost("aten::masked_fill_", T(32, 64, dtype="fp16"), T(32, 64, dtype="bool"), 0.0)
    assert c.flops == 0
    assert c.bytes == N * 2 + N * 1 + N * 2  # self and mask read, self written


@pytest.mark.parametrize(("name", "flops_per_element", "extra"), [
    ("aten::threshold_backward", 0, (0,)), ("aten::sigmoid_backward", 3, ()), ("aten::gelu_backward", 10, ("none",)),
    ("aten::silu_backward", 8, ()),
])
def test_activation_backward(name, flops_per_element, extra):
    c = cost(name, T(32, 64), T(32, 64), *extra)  # (grad_output, self or output[, threshold/approximate])
    assert c.flops == flops_per_element * N
    assert c.bytes == 3 * N * 4  # grad and saved tensor read, grad_input written


def test_mse_loss_backward_scalar_grad():
    c = cost("aten::mse_loss_backward", T(), T(32, 64), T(32, 64), 1)
    assert c.flops == 3 * N  # 2 * grad * (self - target)
    assert c.bytes == 4 + 2 * N * 4 + N * 4  # 0-dim grad, self, target read; grad_input written


def test_zero_writes_only():
    c = cost("aten::zero_", T(32, 64, dtype="fp16"))  # zero_(self): no other argument
    assert (c.flops, c.bytes) == (0, N * 2)


@pytest.mark.parametrize("name", ["aten::fill_", "aten::normal_", "aten::uniform_",
                                  "aten::bernoulli_"])
def test_fill_writes_only(name):
    c = cost(name, T(32, 64, dtype="fp16"), 0.0)
    assert c.flops == 0  # fills and random fills: no FLOP counted
    assert c.bytes == N * 2  # self written once, nothing read
    assert c.dtype == "fp16"


def test_fill_without_tensor_is_unknown():
    assert cost_of(OpCall("aten::fill_", (None, 1.0))) is None


def test_native_dropout():
    c = cost("aten::native_dropout", T(32, 64, dtype="bf16"), 0.1, True)
    assert c.flops == N  # the 1/(1-p) scale
    assert c.bytes == N * 2 + N * 2 + N * 1  # x read, out written (bf16), bool mask written


def test_elementwise_without_tensors_is_unknown():
    assert cost_of(OpCall("aten::exp", ())) is None
    assert cost_of(OpCall("aten::add", (1.0, 2.0))) is None


def test_arange():
    c = cost("aten::arange", 0, 512, 1, None, None, None, False)  # arange.start_step: no dtype, int bounds
    assert (c.flops, c.bytes, c.dtype) == (512, 512 * 8, "int64")  # int64 output written once
    half = cost("aten::arange", 0.0, 1.0, 0.25, 5, None, None, None)  # start_step, dtype code 5: fp16
    assert (half.flops, half.bytes) == (4, 4 * 2)
