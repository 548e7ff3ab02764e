"""Scaled dot-product attention, forward and backward: FLOPs per visible (query, key) pair.

flop_counter counts every (query, key) pair; we count the pairs a mask leaves visible
(torch_flops.DIFFERS), since fused kernels skip masked tiles:
- causal, top-left aligned (query i sees keys j <= i): SDPA's `is_causal` as documented, the
  memory-efficient kernel (custom_mask_type 1), cuDNN, the CPU flash kernel and the math path;
- causal, bottom-right aligned (j <= i + Sk - Sq): FlashAttention-2's `is_causal`
  (_flash_attention_forward/backward, _scaled_dot_product_flash_attention on CUDA, which SDPA
  only picks for causal when Sq == Sk, where both alignments agree) and custom_mask_type 2;
- sliding windows (FlashAttention's window_size_left/right around the bottom-right diagonal; the
  efficient kernel's window_size keys back from it).
Per visible pair: forward 2*(Dqk + Dv) FLOPs (Q@K^T and P@V); backward 2*(3*Dqk + 2*Dv)
(recomputed scores, dP, dV, dQ, dK), flop_counter's own terms. Approximation: the kernels
compute whole tiles along the diagonal, so they execute somewhat more than the visible pairs
(Nsight Compute on the H200, GPT-2 forward, S=512: 1.89e11 tensor FLOPs where we count 1.55e11).
Grouped-query attention counts the query heads. Bytes: Q, K, V, an attention bias or mask
(a broadcast bias reads its source once) and the output read/written once, plus the fp32
log-sum-exp per query row; the backward reads grad_out, Q, K, V, out, log-sum-exp (and bias),
and writes grad Q, K, V (and grad bias when asked).
"""

from __future__ import annotations

from dataclasses import dataclass

from rooflinectl.costs.registry import NotModelled, OpCost, cost_formula
from rooflinectl.costs.tensors import OpCall, TensorArg, unique_read_bytes

TOP_LEFT, BOTTOM_RIGHT = "top-left", "bottom-right"


def _below(sq: int, sk: int, c: int) -> int:
    """Pairs (i, j), 0 <= i < sq, 0 <= j < sk, with j < i + c: sum over i of clip(i + c, 0, sk)."""

    def prefix(m: int) -> int:  # sum of clip(a, 0, sk) for every integer a < m
        if m <= 0:
            return 0
        if m <= sk + 1:
            return m * (m - 1) // 2
        return sk * (sk + 1) // 2 + (m - sk - 1) * sk

    return prefix(c + sq) - prefix(c)


def visible_pairs(sq: int, sk: int, lo: int | None, hi: int | None) -> int:
    """Pairs (i, j) with lo <= j - i <= hi (None: unbounded) in an [sq, sk] score matrix."""
    upto_hi = sq * sk if hi is None else _below(sq, sk, hi + 1)
    below_lo = 0 if lo is None else _below(sq, sk, lo)
    return max(upto_hi - below_lo, 0)


@dataclass(frozen=True)
class Mask:
    """Which (query, key) pairs are computed: diagonal band bounds relative to the alignment."""

    causal: bool = False
    align: str = TOP_LEFT
    left: int | None = None  # keys visible before the diagonal (None: all)
    right: int | None = None  # keys visible after it (None: all; causal forces 0)

    def pairs(self, sq: int, sk: int) -> int:
        offset = sk - sq if self.align == BOTTOM_RIGHT else 0
        right = 0 if self.causal else self.right
        lo = None if self.left is None else offset - self.left
        hi = None if right is None else offset + right
        return visible_pairs(sq, sk, lo, hi)

    def describe(self) -> str:
        parts = []
        if self.causal:
            parts.append(f"causal ({self.align})")
        if self.left is not None or (self.right is not None and not self.causal):
            parts.append(f"window ({self.left}, {self.right})")
        return ", ".join(parts) or "no mask"


def _window(value: object) -> int | None:
    return None if value is None or not isinstance(value, int) or value < 0 else int(value)


def _bhsd(t: TensorArg, layout: str) -> tuple[int, int, int, int]:
    """(B, H, S, D) from the op's layout: SDPA ops take (B, H, S, D), flash/efficient (B, S, H, D)."""
    b, x, y, d = t.shape
    return (b, x, y, d) if layout == "bhsd" else (b, y, x, d)


def _forward(call: OpCall, mask: Mask, layout: str, bias: str | None, lse: bool, note: str, lse_rows: int = 1) -> OpCost:
    """lse_rows: the log-sum-exp's query dimension is padded to a multiple of it (the
    memory-efficient kernel pads to 32)."""
    q, k, v = call.input("query"), call.input("key"), call.input("value")
    b, hq, sq, dqk = _bhsd(q, layout)
    sk, dv = _bhsd(k, layout)[2], _bhsd(v, layout)[3]
    pairs = b * hq * mask.pairs(sq, sk)
    flops = 2 * pairs * (dqk + dv)
    reads = [q, k, v, call.input(bias) if bias else None]
    padded = -(-sq // lse_rows) * lse_rows
    written = b * hq * sq * dv * q.itemsize + (b * hq * padded * 4 if lse else 0)
    read = unique_read_bytes(t for t in reads if t is not None)
    return OpCost(float(flops), float(read + written), "attention", q.dtype, f"{note}: {mask.describe()}")


def _backward(call: OpCall, mask: Mask, layout: str, bias: str | None, grad_bias: bool, note: str) -> OpCost:
    g = call.input("grad_out") or call.input("grad_out_")
    q, k, v = call.input("query"), call.input("key"), call.input("value")
    b, hq, sq, dqk = _bhsd(q, layout)
    sk, dv = _bhsd(k, layout)[2], _bhsd(v, layout)[3]
    flops = 2 * b * hq * mask.pairs(sq, sk) * (3 * dqk + 2 * dv)
    bias_t = call.input(bias) if bias else None
    reads = [g, q, k, v, call.input("out"), call.input("logsumexp"), bias_t]
    written = q.nbytes + k.nbytes + v.nbytes + (bias_t.nbytes if grad_bias and bias_t is not None else 0)
    read = unique_read_bytes(t for t in reads if t is not None)
    return OpCost(float(flops), float(read + written), "attention", q.dtype, f"{note}: {mask.describe()}")


def _dense_batches(call: OpCall, offsets: str) -> None:
    """Variable-length (packed) batches carry per-sequence offsets whose values the profiler does
    not record: not modelled."""
    if call.input(offsets) is not None:
        raise NotModelled(f"packed variable-length batches ({offsets} given): sequence lengths not recorded")


def _causal(call: OpCall) -> bool:
    return bool(call.get("is_causal", False))


@cost_formula("aten::_scaled_dot_product_flash_attention", family="attention")
def sdpa_flash_cost(call: OpCall) -> OpCost | None:
    """(query, key, value, dropout_p, is_causal, ...), (B, H, S, D): FlashAttention-2, causal
    aligned bottom-right; writes the output and the fp32 log-sum-exp."""
    return _forward(call, Mask(_causal(call), BOTTOM_RIGHT), "bhsd", None, True, "SDPA flash")


@cost_formula("aten::_scaled_dot_product_flash_attention_for_cpu", family="attention")
def sdpa_flash_cpu_cost(call: OpCall) -> OpCost | None:
    """(query, key, value, dropout_p, is_causal, attn_mask, scale), (B, H, S, D): the CPU kernel,
    causal aligned top-left; attn_mask read once."""
    return _forward(call, Mask(_causal(call), TOP_LEFT), "bhsd", "attn_mask", True, "SDPA flash (CPU)")


@cost_formula("aten::_scaled_dot_product_efficient_attention", "aten::_scaled_dot_product_cudnn_attention",
              "aten::_scaled_dot_product_fused_attention_overrideable", family="attention")
def sdpa_bias_cost(call: OpCall) -> OpCost | None:
    """(query, key, value, attn_bias, [compute_log_sumexp,] dropout_p, is_causal, ...),
    (B, H, S, D): causal aligned top-left; attn_bias read once; log-sum-exp written when
    compute_log_sumexp (always, for the overrideable op; padded to 32 rows by the efficient one)."""
    lse = bool(call.get("compute_log_sumexp", True))
    rows = 32 if call.name == "aten::_scaled_dot_product_efficient_attention" else 1
    return _forward(call, Mask(_causal(call), TOP_LEFT), "bhsd", "attn_bias", lse, "SDPA", rows)


@cost_formula("aten::_flash_attention_forward", family="attention")
def flash_forward_cost(call: OpCall) -> OpCost | None:
    """(query, key, value, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal, ...,
    window_size_left, window_size_right), (B, S, H, D): bottom-right causal and sliding windows.
    Variable-length (packed) batches are not modelled: unknown."""
    _dense_batches(call, "cum_seq_q")
    mask = Mask(_causal(call), BOTTOM_RIGHT, _window(call.get("window_size_left")),
                _window(call.get("window_size_right")))
    return _forward(call, mask, "bshd", None, True, "flash attention forward")


def _efficient_mask(call: OpCall) -> Mask:
    """custom_mask_type 0: none, 1: causal from the top left, 2: causal from the bottom right;
    window_size: keys visible back from the diagonal."""
    kind = call.get("custom_mask_type", 0)
    window = _window(call.get("window_size"))
    left = window - 1 if window else None
    return Mask(kind in (1, 2), BOTTOM_RIGHT if kind == 2 else TOP_LEFT, left)


@cost_formula("aten::_efficient_attention_forward", family="attention")
def efficient_forward_cost(call: OpCall) -> OpCost | None:
    """(query, key, value, bias, cu_seqlens_q, cu_seqlens_k, ..., custom_mask_type,
    compute_log_sumexp, ..., window_size), (B, S, H, D); packed batches are not modelled."""
    _dense_batches(call, "cu_seqlens_q")
    return _forward(call, _efficient_mask(call), "bshd", "bias", bool(call.get("compute_log_sumexp", False)),
                    "efficient attention forward", lse_rows=32)


@cost_formula("aten::_scaled_dot_product_flash_attention_backward", family="attention")
def sdpa_flash_backward_cost(call: OpCall) -> OpCost | None:
    """(grad_out, query, key, value, out, logsumexp, ..., is_causal, ...), (B, H, S, D):
    FlashAttention-2 backward, causal aligned bottom-right."""
    return _backward(call, Mask(_causal(call), BOTTOM_RIGHT), "bhsd", None, False, "SDPA flash backward")


@cost_formula("aten::_scaled_dot_product_flash_attention_for_cpu_backward", family="attention")
def sdpa_flash_cpu_backward_cost(call: OpCall) -> OpCost | None:
    """(grad_out, query, key, value, out, logsumexp, dropout_p, is_causal, attn_mask, ...):
    the CPU kernel's backward, causal aligned top-left."""
    return _backward(call, Mask(_causal(call), TOP_LEFT), "bhsd", "attn_mask", False, "SDPA flash backward (CPU)")


@cost_formula("aten::_scaled_dot_product_efficient_attention_backward",
              "aten::_scaled_dot_product_cudnn_attention_backward",
              "aten::_scaled_dot_product_fused_attention_overrideable_backward", family="attention")
def sdpa_bias_backward_cost(call: OpCall) -> OpCost | None:
    """(grad_out, query, key, value, [attn_bias,] out, logsumexp, ..., [grad_input_mask,]
    is_causal, ...), (B, H, S, D): causal aligned top-left; the bias read, and its gradient
    written when grad_input_mask[3] asks for it."""
    mask = call.get("grad_input_mask") or []
    grad_bias = len(mask) > 3 and bool(mask[3])
    return _backward(call, Mask(_causal(call), TOP_LEFT), "bhsd", "attn_bias", grad_bias, "SDPA backward")


@cost_formula("aten::_flash_attention_backward", family="attention")
def flash_backward_cost(call: OpCall) -> OpCost | None:
    """(grad_out, query, key, value, out, logsumexp, cum_seq_q, ..., is_causal, ...,
    window_size_left, window_size_right), (B, S, H, D): bottom-right causal, windows."""
    _dense_batches(call, "cum_seq_q")
    mask = Mask(_causal(call), BOTTOM_RIGHT, _window(call.get("window_size_left")),
                _window(call.get("window_size_right")))
    return _backward(call, mask, "bshd", None, False, "flash attention backward")


@cost_formula("aten::_efficient_attention_backward", family="attention")
def efficient_backward_cost(call: OpCall) -> OpCost | None:
    """(grad_out_, query, key, value, bias, out, cu_seqlens_q, ..., custom_mask_type,
    bias_requires_grad, ..., window_size), (B, S, H, D); packed batches are not modelled."""
    _dense_batches(call, "cu_seqlens_q")
    return _backward(call, _efficient_mask(call), "bshd", "bias", bool(call.get("bias_requires_grad", False)),
                     "efficient attention backward")


@cost_formula("FlexAttentionAutogradOp", family="attention")
def flex_attention_cost(call: OpCall) -> OpCost | None:
    """Eager flex_attention, recorded as its autograd Function (no schema: query, key, value are
    its first three tensors, (B, H, S, D)). The eager path computes every (query, key) pair, so
    FLOPs are flop_counter's flex_attention count without a sparsity hint (that hint exists only
    in compiled graphs, whose Triton kernels carry Inductor's own counts); the output and fp32
    log-sum-exp written once."""
    tensors = call.tensors()
    if len(tensors) < 3:
        return None
    q, k, v = tensors[:3]
    b, hq, sq, dqk = q.shape
    flops = 2 * b * hq * sq * k.shape[2] * (dqk + v.shape[3])
    written = b * hq * sq * v.shape[3] * q.itemsize + b * hq * sq * 4
    return OpCost(float(flops), float(unique_read_bytes([q, k, v]) + written), "attention", q.dtype,
                  "flex attention (eager): every pair computed")
