"""GEMM, convolution and attention: FLOPs from PyTorch's own registry (torch.utils.flop_counter).

We add what that registry leaves out: output shapes (the profiler records inputs only), bytes
(inputs read once, output written once: the minimum traffic a perfect tiling reaches), int8
`_int_mm`, and causal attention. Where our model differs from flop_counter:
- causal attention counts half the score/value FLOPs (flop_counter counts the full square;
  Nsight Compute on the H200 counted about half: on a GPT-2 forward with causal SDPA it counted
  2.209e12 bf16 tensor FLOPs, against 2.02e12 for the linear layers plus 1.55e11 for halved
  attention, 3.09e11 unhalved);
- convolution backward counts grad-input and grad-weight (both usually requested) unless the
  recorded output_mask says otherwise.
"""

from __future__ import annotations

from torch.utils import flop_counter as fc

from rooflinectl.costs.registry import OpCost, cost_formula
from rooflinectl.costs.tensors import SCALAR_TYPE_CODES, OpCall, TensorArg, unique_read_bytes


def _gemm_cost(a: TensorArg, b: TensorArg, flops: int, out_numel: int, reads: list[TensorArg],
               note: str, out_itemsize: int | None = None, family: str = "gemm") -> OpCost:
    written = out_numel * (out_itemsize or a.itemsize)
    return OpCost(float(flops), float(unique_read_bytes(reads) + written), family, a.dtype, note)


@cost_formula("aten::mm", family="gemm")
def mm_cost(call: OpCall) -> OpCost | None:
    """2*M*N*K (torch flop_counter.mm_flop); reads A and B, writes C [M, N]."""
    a, b = call.tensor(0), call.tensor(1)
    m, k = a.shape
    n = b.shape[1]
    return _gemm_cost(a, b, fc.mm_flop(a.shape, b.shape), m * n, [a, b], "mm: 2*M*N*K (flop_counter)")


@cost_formula("aten::addmm", family="gemm")
def addmm_cost(call: OpCall) -> OpCost | None:
    """2*M*N*K (flop_counter.addmm_flop; the bias add is not counted); reads bias, A, B, writes C."""
    bias, a, b = call.tensor(0), call.tensor(1), call.tensor(2)
    flops = fc.addmm_flop(bias.shape, a.shape, b.shape)
    return _gemm_cost(a, b, flops, a.shape[0] * b.shape[1], [bias, a, b],
                      "addmm: 2*M*N*K (flop_counter), bias add not counted")


@cost_formula("aten::bmm", family="gemm")
def bmm_cost(call: OpCall) -> OpCost | None:
    """2*B*M*N*K (flop_counter.bmm_flop); reads A and B, writes C [B, M, N]."""
    a, b = call.tensor(0), call.tensor(1)
    batch, m, _ = a.shape
    return _gemm_cost(a, b, fc.bmm_flop(a.shape, b.shape), batch * m * b.shape[2], [a, b],
                      "bmm: 2*B*M*N*K (flop_counter)")


@cost_formula("aten::baddbmm", family="gemm")
def baddbmm_cost(call: OpCall) -> OpCost | None:
    """2*B*M*N*K (flop_counter.baddbmm_flop); reads self, A, B, writes C."""
    c, a, b = call.tensor(0), call.tensor(1), call.tensor(2)
    batch, m, _ = a.shape
    return _gemm_cost(a, b, fc.baddbmm_flop(c.shape, a.shape, b.shape), batch * m * b.shape[2],
                      [c, a, b], "baddbmm: 2*B*M*N*K (flop_counter)")


@cost_formula("aten::_scaled_mm", family="gemm")
def scaled_mm_cost(call: OpCall) -> OpCost | None:
    """fp8 GEMM: 2*M*N*K (flop_counter._scaled_mm_flop); output dtype from out_dtype (default: A's)."""
    a, b = call.tensor(0), call.tensor(1)
    out_code = call.arg(6)
    out_itemsize = SCALAR_TYPE_CODES.get(out_code, (a.dtype, a.itemsize))[1] if isinstance(out_code, int) else None
    reads = [t for t in call.tensors()[:6]]
    return _gemm_cost(a, b, fc.mm_flop(a.shape, b.shape), a.shape[0] * b.shape[1], reads,
                      "_scaled_mm: 2*M*N*K (flop_counter)", out_itemsize)


@cost_formula("aten::_int_mm", family="gemm")
def int_mm_cost(call: OpCall) -> OpCost | None:
    """int8 GEMM: 2*M*N*K integer ops (not in flop_counter); int32 output."""
    a, b = call.tensor(0), call.tensor(1)
    return _gemm_cost(a, b, fc.mm_flop(a.shape, b.shape), a.shape[0] * b.shape[1], [a, b],
                      "_int_mm: 2*M*N*K int8 ops, int32 output", out_itemsize=4)


def conv_out_shape(x: tuple[int, ...], w: tuple[int, ...], stride: list[int], padding: list[int],
                   dilation: list[int], transposed: bool, output_padding: list[int], groups: int) -> tuple[int, ...]:
    """Output shape of an N-d convolution (the profiler records inputs only)."""
    spatial = len(x) - 2

    def at(values: list[int] | int | None, i: int, default: int) -> int:
        if values is None or values == []:
            return default
        if isinstance(values, int):
            return values
        return values[i] if i < len(values) else values[-1]

    dims = []
    for i in range(spatial):
        size, kernel = x[2 + i], w[2 + i]
        s, p, d = at(stride, i, 1), at(padding, i, 0), at(dilation, i, 1)
        if transposed:
            dims.append((size - 1) * s - 2 * p + d * (kernel - 1) + at(output_padding, i, 0) + 1)
        else:
            dims.append((size + 2 * p - d * (kernel - 1) - 1) // s + 1)
    out_channels = w[1] * groups if transposed else w[0]
    return (x[0], out_channels, *dims)


def _conv_cost(x: TensorArg, w: TensorArg, bias: TensorArg | None, stride, padding, dilation,
               transposed: bool, output_padding, groups: int) -> OpCost:
    out = conv_out_shape(x.shape, w.shape, stride, padding, dilation, bool(transposed), output_padding, int(groups or 1))
    flops = fc.conv_flop_count(list(x.shape), list(w.shape), list(out), bool(transposed))
    reads = [x, w] + ([bias] if bias is not None else [])
    numel = 1
    for n in out:
        numel *= n
    return OpCost(float(flops), float(unique_read_bytes(reads) + numel * x.itemsize), "conv", x.dtype,
                  "convolution: flop_counter.conv_flop_count; input, weight, bias read once, output written once")


@cost_formula("aten::convolution", "aten::_convolution", "aten::convolution_overrideable", family="conv")
def convolution_cost(call: OpCall) -> OpCost | None:
    """(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)."""
    return _conv_cost(call.tensor(0), call.tensor(1), call.tensor(2), call.arg(3), call.arg(4),
                      call.arg(5), call.arg(6), call.arg(7), call.arg(8))


@cost_formula("aten::cudnn_convolution", family="conv")
def cudnn_convolution_cost(call: OpCall) -> OpCost | None:
    """(input, weight, padding, stride, dilation, groups, benchmark, deterministic, allow_tf32)."""
    return _conv_cost(call.tensor(0), call.tensor(1), None, call.arg(3), call.arg(2), call.arg(4),
                      False, None, call.arg(5))


@cost_formula("aten::mkldnn_convolution", family="conv")
def mkldnn_convolution_cost(call: OpCall) -> OpCost | None:
    """(input, weight, bias, padding, stride, dilation, groups)."""
    return _conv_cost(call.tensor(0), call.tensor(1), call.tensor(2), call.arg(4), call.arg(3),
                      call.arg(5), False, None, call.arg(6))


@cost_formula("aten::convolution_backward", family="conv")
def convolution_backward_cost(call: OpCall) -> OpCost | None:
    """(grad_out, input, weight, bias_sizes, stride, padding, dilation, transposed, output_padding,
    groups, output_mask): flop_counter.conv_backward_flop; grad_out, input, weight read once,
    grad_input and grad_weight written once."""
    g, x, w = call.tensor(0), call.tensor(1), call.tensor(2)
    mask = call.arg(10) or [True, True, True]
    transposed = bool(call.arg(7))
    # flop_counter's shape_wrapper passes out_shape itself, from the out_val keyword.
    flops = fc.conv_backward_flop(g.shape, x.shape, w.shape, None, None, None, None, transposed,
                                  None, None, mask, out_val=[x.shape, w.shape, None])
    written = (x.nbytes if mask[0] else 0) + (w.nbytes if mask[1] else 0)
    return OpCost(float(flops), float(unique_read_bytes([g, x, w]) + written), "conv", x.dtype,
                  "convolution backward: flop_counter.conv_backward_flop")


def _attention_cost(q: tuple[int, ...], k: tuple[int, ...], v: tuple[int, ...], tensors: list[TensorArg],
                    causal: bool, dtype: str, itemsize: int, note: str) -> OpCost:
    """q, k, v in (B, H, S, D) order; output (B, H, Sq, Dv) written plus fp32 log-sum-exp (B, H, Sq)."""
    flops = fc.sdpa_flop_count(q, k, v)
    if causal:
        flops //= 2
    b, h, sq, _ = q
    written = b * h * sq * v[3] * itemsize + b * h * sq * 4
    return OpCost(float(flops), float(unique_read_bytes(tensors[:3]) + written), "attention", dtype,
                  note + ("; causal: half the FLOPs of the full square" if causal else ""))


@cost_formula("aten::_scaled_dot_product_flash_attention",
              "aten::_scaled_dot_product_flash_attention_for_cpu", family="attention")
def sdpa_flash_cost(call: OpCall) -> OpCost | None:
    """(query, key, value, dropout_p, is_causal, ...), (B, H, S, D) layout: flop_counter.sdpa_flop_count."""
    q, k, v = call.tensor(0), call.tensor(1), call.tensor(2)
    return _attention_cost(q.shape, k.shape, v.shape, call.tensors(), bool(call.arg(4)), q.dtype, q.itemsize,
                           "attention: flop_counter.sdpa_flop_count")


@cost_formula("aten::_scaled_dot_product_efficient_attention",
              "aten::_scaled_dot_product_cudnn_attention", family="attention")
def sdpa_efficient_cost(call: OpCall) -> OpCost | None:
    """(query, key, value, attn_bias, compute_log_sumexp, dropout_p, is_causal, ...), (B, H, S, D)."""
    q, k, v = call.tensor(0), call.tensor(1), call.tensor(2)
    return _attention_cost(q.shape, k.shape, v.shape, call.tensors(), bool(call.arg(6)), q.dtype, q.itemsize,
                           "attention: flop_counter.sdpa_flop_count")


def _bshd_to_bhsd(shape: tuple[int, ...]) -> tuple[int, ...]:
    b, s, h, d = shape
    return (b, h, s, d)


@cost_formula("aten::_flash_attention_forward", family="attention")
def flash_forward_cost(call: OpCall) -> OpCost | None:
    """(query, key, value, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal, ...), (B, S, H, D)."""
    q, k, v = call.tensor(0), call.tensor(1), call.tensor(2)
    if call.tensor(3) is not None:  # variable-length (nested) batches: not modelled
        return None
    return _attention_cost(_bshd_to_bhsd(q.shape), _bshd_to_bhsd(k.shape), _bshd_to_bhsd(v.shape),
                           [q, k, v], bool(call.arg(8)), q.dtype, q.itemsize,
                           "flash attention forward: flop_counter.sdpa_flop_count")


@cost_formula("aten::_efficient_attention_forward", family="attention")
def efficient_forward_cost(call: OpCall) -> OpCost | None:
    """(query, key, value, bias, cu_seqlens_q, cu_seqlens_k, max_q, max_k, dropout_p,
    custom_mask_type, ...), (B, S, H, D); custom_mask_type 1 or 2 = causal."""
    q, k, v = call.tensor(0), call.tensor(1), call.tensor(2)
    if call.arg(4) is not None and isinstance(call.arg(4), TensorArg):
        return None
    causal = call.arg(9) in (1, 2)
    return _attention_cost(_bshd_to_bhsd(q.shape), _bshd_to_bhsd(k.shape), _bshd_to_bhsd(v.shape),
                           [q, k, v], causal, q.dtype, q.itemsize,
                           "efficient attention forward: flop_counter.sdpa_flop_count")


@cost_formula("aten::_scaled_dot_product_flash_attention_backward",
              "aten::_scaled_dot_product_efficient_attention_backward",
              "aten::_scaled_dot_product_cudnn_attention_backward", family="attention")
def sdpa_backward_cost(call: OpCall) -> OpCost | None:
    """(grad_out, query, key, value, out, ...), (B, H, S, D): flop_counter.sdpa_backward_flop_count;
    reads grad_out, q, k, v, out once, writes grad q, k, v once. Causal is not detected here."""
    g, q, k, v = call.tensor(0), call.tensor(1), call.tensor(2), call.tensor(3)
    flops = fc.sdpa_backward_flop_count(g.shape, q.shape, k.shape, v.shape)
    reads = call.tensors()[:5]
    return OpCost(float(flops), float(unique_read_bytes(reads) + q.nbytes + k.nbytes + v.nbytes),
                  "attention", q.dtype, "attention backward: flop_counter.sdpa_backward_flop_count")
