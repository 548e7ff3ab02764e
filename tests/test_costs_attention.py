"""Attention cost formulas: FLOPs per visible (query, key) pair, by mask alignment and window.

Expected pair counts are counted by brute force over the score matrix (an independent check of
the closed form in costs/attention.py); bytes are tensor sizes. The old formula halved causal
attention flatly and never the backward: the Sq != Sk, window and backward cases fail on it.
"""

from __future__ import annotations

import pytest
from cost_helpers import T, named, named_cost

from rooflinectl.costs import explain_cost
from rooflinectl.costs.attention import visible_pairs

B, H, SQ, SK, D = 2, 8, 128, 256, 64
BF = "bf16"


def brute_pairs(sq: int, sk: int, visible) -> int:
    return sum(1 for i in range(sq) for j in range(sk) if visible(i, j))


TOP_LEFT = brute_pairs(SQ, SK, lambda i, j: j <= i)  # SDPA's is_causal: tril(ones(Sq, Sk))
BOTTOM_RIGHT = brute_pairs(SQ, SK, lambda i, j: j <= i + SK - SQ)  # FlashAttention-2's causal
FULL = SQ * SK
OUT_BYTES = B * H * SQ * D * 2  # bf16 output
LSE_BYTES = B * H * SQ * 4  # fp32 log-sum-exp
QKV_BYTES = (B * H * SQ * D + 2 * B * H * SK * D) * 2


def bhsd():
    return {"query": T(B, H, SQ, D, dtype=BF), "key": T(B, H, SK, D, dtype=BF), "value": T(B, H, SK, D, dtype=BF)}


def bshd():
    return {"query": T(B, SQ, H, D, dtype=BF), "key": T(B, SK, H, D, dtype=BF), "value": T(B, SK, H, D, dtype=BF)}


def forward_flops(pairs: int, heads: int = H, dqk: int = D, dv: int = D) -> int:
    return 2 * B * heads * pairs * (dqk + dv)  # Q@K^T and P@V per visible pair


def test_pair_counts_differ_by_alignment():
    assert (TOP_LEFT, BOTTOM_RIGHT) == (8256, 24640)  # neither is FULL / 2 = 16384 when Sq != Sk
    assert visible_pairs(SQ, SK, None, 0) == TOP_LEFT
    assert visible_pairs(SQ, SK, None, SK - SQ) == BOTTOM_RIGHT
    assert visible_pairs(7, 7, None, 0) == 28 == brute_pairs(7, 7, lambda i, j: j <= i)


@pytest.mark.parametrize(("sq", "sk", "lo", "hi"), [
    (5, 9, -2, 1), (9, 5, None, 3), (1, 17, 16, 16), (16, 1, -20, None), (12, 12, -3, 3), (3, 40, 30, None),
    (6, 6, 2, 1),  # empty band
])
def test_visible_pairs_against_brute_force(sq, sk, lo, hi):
    def visible(i: int, j: int) -> bool:
        return (lo is None or j - i >= lo) and (hi is None or j - i <= hi)

    assert visible_pairs(sq, sk, lo, hi) == brute_pairs(sq, sk, visible)


@pytest.mark.parametrize(("key", "extra", "pairs"), [
    ("aten::_scaled_dot_product_flash_attention", {}, BOTTOM_RIGHT),
    ("aten::_scaled_dot_product_flash_attention_for_cpu", {}, TOP_LEFT),
    ("aten::_scaled_dot_product_efficient_attention", {"compute_log_sumexp": True}, TOP_LEFT),
    ("aten::_scaled_dot_product_cudnn_attention", {"compute_log_sumexp": True}, TOP_LEFT),
])
def test_sdpa_causal_alignment(key, extra, pairs):
    causal = named_cost(key, **bhsd(), is_causal=True, **extra)
    full = named_cost(key, **bhsd(), is_causal=False, **extra)
    assert causal.flops == forward_flops(pairs)
    assert full.flops == forward_flops(FULL)  # 4*B*H*Sq*Sk*D
    assert causal.bytes == full.bytes == QKV_BYTES + OUT_BYTES + LSE_BYTES
    assert (causal.family, causal.dtype) == ("attention", BF)


def test_efficient_attention_without_log_sumexp_writes_only_the_output():
    c = named_cost("aten::_scaled_dot_product_efficient_attention", **bhsd(), compute_log_sumexp=False)
    assert c.bytes == QKV_BYTES + OUT_BYTES


def test_attention_bias_is_read():
    bias = T(B, H, SQ, SK, dtype=BF)
    c = named_cost("aten::_scaled_dot_product_efficient_attention", **bhsd(), attn_bias=bias, compute_log_sumexp=True)
    assert c.flops == forward_flops(FULL)  # a bias masks nothing out: every pair computed
    assert c.bytes == QKV_BYTES + B * H * SQ * SK * 2 + OUT_BYTES + LSE_BYTES
    broadcast = T(B, H, SQ, SK, dtype=BF, strides=(0, 0, SK, 1))  # one [Sq, Sk] mask for all heads
    c = named_cost("aten::_scaled_dot_product_cudnn_attention", **bhsd(), attn_bias=broadcast, compute_log_sumexp=True)
    assert c.bytes == QKV_BYTES + SQ * SK * 2 + OUT_BYTES + LSE_BYTES  # its source read once


def test_flash_forward_bottom_right_and_windows():
    c = named_cost("aten::_flash_attention_forward", **bshd(), max_q=SQ, max_k=SK, is_causal=True)
    assert c.flops == forward_flops(BOTTOM_RIGHT)  # (B, S, H, D) layout read as (B, H, S, D)
    assert c.bytes == QKV_BYTES + OUT_BYTES + LSE_BYTES
    window = named_cost("aten::_flash_attention_forward", **bshd(), max_q=SQ, max_k=SK, is_causal=True,
                        window_size_left=32, window_size_right=0)
    # query i sees keys i + Sk - Sq - 32 ... i + Sk - Sq: 33 keys for every query
    assert window.flops == forward_flops(brute_pairs(SQ, SK, lambda i, j: i + SK - SQ - 32 <= j <= i + SK - SQ))
    assert window.flops == forward_flops(SQ * 33)
    local = named_cost("aten::_flash_attention_forward", **bshd(), max_q=SQ, max_k=SK, is_causal=False,
                       window_size_left=8, window_size_right=4)
    assert local.flops == forward_flops(brute_pairs(SQ, SK, lambda i, j: -8 <= j - (i + SK - SQ) <= 4))


def test_flash_forward_packed_batches_are_not_modelled():
    call = named("aten::_flash_attention_forward", **bshd(), cum_seq_q=T(3, dtype="int32"),
                 cum_seq_k=T(3, dtype="int32"), max_q=SQ, max_k=SK)
    assert explain_cost(call)[0] is None


@pytest.mark.parametrize(("mask_type", "pairs"), [(0, FULL), (1, TOP_LEFT), (2, BOTTOM_RIGHT)])
def test_efficient_forward_custom_mask_type(mask_type, pairs):
    c = named_cost("aten::_efficient_attention_forward", **bshd(), max_seqlen_q=SQ, max_seqlen_k=SK,
                   custom_mask_type=mask_type, compute_log_sumexp=True)
    assert c.flops == forward_flops(pairs)


def backward_flops(pairs: int, heads: int = H) -> int:
    # recomputed scores, dP = dO@V^T, dV = P^T@dO, dQ = dS@K, dK = dS^T@Q: 2*D FLOPs per pair each
    return 2 * B * heads * pairs * 5 * D


def _backward_args(**extra):
    args = bhsd()
    args.update(out=T(B, H, SQ, D, dtype=BF), logsumexp=T(B, H, SQ), **extra)
    return args


BACKWARD_READS = QKV_BYTES + 2 * B * H * SQ * D * 2 + LSE_BYTES  # q, k, v, dO, out, lse
BACKWARD_WRITES = QKV_BYTES  # dq, dk, dv


@pytest.mark.parametrize(("key", "grad", "pairs"), [
    ("aten::_scaled_dot_product_flash_attention_backward", "grad_out", BOTTOM_RIGHT),
    ("aten::_scaled_dot_product_efficient_attention_backward", "grad_out_", TOP_LEFT),
    ("aten::_scaled_dot_product_cudnn_attention_backward", "grad_out", TOP_LEFT),
])
def test_attention_backward_causal(key, grad, pairs):
    full = named_cost(key, **_backward_args(**{grad: T(B, H, SQ, D, dtype=BF)}), is_causal=False)
    causal = named_cost(key, **_backward_args(**{grad: T(B, H, SQ, D, dtype=BF)}), is_causal=True)
    assert full.flops == backward_flops(FULL)
    assert causal.flops == backward_flops(pairs)  # the old formula never masked the backward
    assert full.bytes == causal.bytes == BACKWARD_READS + BACKWARD_WRITES
    assert causal.family == "attention"


def test_efficient_backward_bias_gradient_written_when_asked():
    bias = T(B, H, SQ, SK, dtype=BF)
    args = _backward_args(grad_out_=T(B, H, SQ, D, dtype=BF), attn_bias=bias)
    without = named_cost("aten::_scaled_dot_product_efficient_attention_backward", **args,
                         grad_input_mask=[True, True, True, False])
    with_grad = named_cost("aten::_scaled_dot_product_efficient_attention_backward", **args,
                           grad_input_mask=[True, True, True, True])
    assert without.bytes == BACKWARD_READS + B * H * SQ * SK * 2 + BACKWARD_WRITES
    assert with_grad.bytes == without.bytes + B * H * SQ * SK * 2


def test_grouped_query_attention_counts_query_heads():
    q, k, v = T(B, 8, SQ, D, dtype=BF), T(B, 2, SK, D, dtype=BF), T(B, 2, SK, D, dtype=BF)
    c = named_cost("aten::_scaled_dot_product_flash_attention", query=q, key=k, value=v)
    assert c.flops == forward_flops(FULL, heads=8)
    assert c.bytes == (B * 8 * SQ * D + 2 * B * 2 * SK * D) * 2 + B * 8 * SQ * D * 2 + B * 8 * SQ * 4


def test_flop_counter_assertion_leaves_the_op_unknown_with_the_reason():
    # flop_counter's mm_flop asserts that the inner dimensions match; the profile must go on.
    cost, why = explain_cost(named("aten::mm", self=T(4, 8), mat2=T(9, 3)))
    assert cost is None
    assert why.startswith("formula raised AssertionError") and "inner dimensions" in why
