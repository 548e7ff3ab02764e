"""Copies, casts, cat, pad, indexing, embeddings and optimiser updates: bytes moved, few FLOPs."""

from __future__ import annotations

import pytest
from cost_helpers import T, cost

from rooflinectl.costs import OpCall, cost_of

# --- copies and casts ----------------------------------------------------------------------------

def test_copy_cast_fp32_to_bf16():
    c = cost("aten::copy_", T(64, 128, dtype="bf16"), T(64, 128), False)  # (self, src, non_blocking)
    assert c.flops == 0
    assert c.bytes == 64 * 128 * 4 + 64 * 128 * 2  # fp32 source read, bf16 destination written
    assert (c.family, c.dtype) == ("copy", "fp32->bf16")  # a cast shows both dtypes


def test_copy_from_broadcast_source():
    c = cost("aten::copy_", T(64, 128), T(64, 128, strides=(0, 1)), False)  # bias expanded over rows
    assert c.bytes == 128 * 4 + 64 * 128 * 4  # the [128] source read once, [64, 128] written


def test_cat():
    c = cost("aten::cat", [T(4, 8), T(6, 8)], 0)
    assert c.flops == 0
    assert c.bytes == (4 * 8 + 6 * 8) * 4 * 2  # inputs read once, output (their total) written


def test_cat_promotes_output_dtype():
    c = cost("aten::cat", [T(4, 8), T(6, 8, dtype="fp64")], 0)
    assert c.bytes == (4 * 8 * 4 + 6 * 8 * 8) + (4 * 8 + 6 * 8) * 8  # reads as stored; fp64 output
    assert c.dtype == "fp64"


def test_cat_shared_storage_and_empty_parts():
    x = T(4, 8, storage=77)
    c = cost("aten::cat", [x, x, T(0)], 1)  # cat([x, x, empty])
    assert c.bytes == 4 * 8 * 4 + 2 * 4 * 8 * 4  # x read once, [4, 16] written; empty part ignored
    assert cost_of(OpCall("aten::cat", ([T(0), T(0)], 0))) is None  # nothing to copy: unknown


def test_constant_pad_nd():
    c = cost("aten::constant_pad_nd", T(2, 3, 4, 5), [1, 2, 3, 4], 0.0)
    # last dim 5 + 1 + 2 = 8, dim 2: 4 + 3 + 4 = 11
    assert c.bytes == 2 * 3 * 4 * 5 * 4 + 2 * 3 * 11 * 8 * 4  # input read, padded output written
    assert c.family == "copy"


# --- indexing ------------------------------------------------------------------------------------

def test_embedding():
    # (weight, indices, padding_idx, scale_grad_by_freq, sparse)
    c = cost("aten::embedding", T(1000, 64), T(4, 16, dtype="int64"), -1, False, False)
    assert c.flops == 0
    assert c.bytes == 4 * 16 * 8 + 2 * (4 * 16) * 64 * 4  # indices; 64 rows of 64 read and written
    assert (c.family, c.dtype) == ("index", "fp32")


@pytest.mark.parametrize(("dim", "slice_elems"), [(0, 32), (1, 100), (-1, 100)])
def test_index_select(dim, slice_elems):
    c = cost("aten::index_select", T(100, 32), dim, T(10, dtype="int64"))  # (self, dim, index)
    assert c.bytes == 10 * 8 + 2 * 10 * slice_elems * 4  # index; 10 slices read and written


def test_gather():
    c = cost("aten::gather", T(16, 32), 1, T(16, 4, dtype="int64"), False)  # (self, dim, index)
    assert c.bytes == 16 * 4 * 8 + 2 * 16 * 4 * 4  # index; one element per index read and written


def test_scatter_inplace_with_src():
    c = cost("aten::scatter_", T(16, 32), 1, T(16, 4, dtype="int64"), T(16, 4))
    assert c.flops == 0
    assert c.bytes == 16 * 4 * 8 + 16 * 4 * 4 + 16 * 4 * 4  # index, src read; targets written


def test_scatter_value_and_out_of_place_copy():
    c = cost("aten::scatter", T(16, 32), 1, T(16, 4, dtype="int64"), 1.0)  # scalar value: no src
    # index read, targets written, self copied (read and written)
    assert c.bytes == 16 * 4 * 8 + 16 * 4 * 4 + 2 * 16 * 32 * 4


def test_scatter_add_counts_adds():
    c = cost("aten::scatter_add_", T(16, 32), 1, T(16, 4, dtype="int64"), T(16, 4))
    assert c.flops == 16 * 4  # one add per index


def test_index_integer():
    c = cost("aten::index", T(100, 32), [T(10, dtype="int64")])  # x[idx]
    assert c.bytes == 10 * 8 + 2 * 10 * 32 * 4  # index; 10 rows of 32 read and written


def test_index_boolean_mask_upper_bound():
    c = cost("aten::index", T(8, 16, 4), [T(8, 16, dtype="bool")])  # x[mask]
    assert c.bytes == 8 * 16 * 1 + 2 * (8 * 16) * 4 * 4  # mask; every masked row read and written


def test_index_without_index_tensors_is_unknown():
    assert cost_of(OpCall("aten::index", (T(100, 32), None))) is None  # what torch 2.13 records


def test_index_put():
    # (self, indices, values, accumulate)
    c = cost("aten::index_put_", T(100, 32), [T(10, dtype="int64")], T(10, 32), False)
    assert c.bytes == 10 * 8 + 10 * 32 * 4 + 10 * 32 * 4  # indices, values read; targets written


def test_embedding_dense_backward():
    # (grad_output, indices, num_weights, padding_idx, scale_grad_by_freq)
    c = cost("aten::embedding_dense_backward", T(4, 16, 64), T(4, 16, dtype="int64"), 1000, -1, False)
    assert c.flops == 4 * 16 * 64  # one add per gradient element
    # grads, indices read; the 64 touched rows of the [1000, 64] gradient read and written (its
    # zero fill is its own op: the old formula counted the whole gradient here too)
    assert c.bytes == 4 * 16 * 64 * 4 + 4 * 16 * 8 + 2 * 64 * 64 * 4


# --- optimisers ----------------------------------------------------------------------------------

def _lists(dtype="fp32"):
    return [T(64, 32, dtype=dtype), T(32, dtype=dtype)]


def test_fused_adam():
    # (params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr, beta1, beta2, ...)
    call = ("aten::_fused_adam_", _lists(), _lists(), _lists(), _lists(), [], [T(), T()],
            1e-3, 0.9, 0.999, 0.0, 1e-8, False, False, None, None)
    c = cost(*call)
    elems = 64 * 32 + 32
    assert c.flops == 15 * elems  # ~15 FLOP per parameter element
    assert c.bytes == 4 * elems * 4 + 3 * elems * 4  # params, grads, 2 moments read; 3 written
    assert (c.family, c.dtype) == ("optimizer", "fp32")


def test_foreach_binary_inplace():
    c = cost("aten::_foreach_add_", _lists(), _lists(), 1)
    elems = 64 * 32 + 32
    assert c.flops == elems  # 1 FLOP per element of the first list
    assert c.bytes == 2 * elems * 4 + elems * 4  # both lists read, the first written in place


def test_foreach_scalar_and_ternary():
    elems = 64 * 32 + 32
    mul = cost("aten::_foreach_mul_", _lists("bf16"), 0.5)
    assert mul.flops == elems
    assert mul.bytes == elems * 2 + elems * 2  # one bf16 list read and written
    addcmul = cost("aten::_foreach_addcmul_", _lists(), _lists(), _lists(), 1.0)
    assert addcmul.flops == 2 * elems  # mul + add
    assert addcmul.bytes == 3 * elems * 4 + elems * 4


def test_foreach_out_of_place_writes_one_list():
    c = cost("aten::_foreach_sqrt", _lists())
    elems = 64 * 32 + 32
    assert c.bytes == elems * 4 + elems * 4  # read, new list written
    assert "one output list" in c.note
