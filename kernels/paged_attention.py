"""Paged-attention decode: one new token per sequence attends to a KV cache kept in pages.

A serving engine stores each sequence's keys and values in fixed-size pages (here 16 tokens)
scattered through one pool, found through a per-sequence block table, like virtual memory: no
reservation for the longest possible sequence, no fragmentation. Decoding reads the whole cache
once per token and does 4 FLOPs per cached element: memory-bound. A program per (sequence,
head) gathers STEP tokens (STEP / 16 pages) at a time through the block table (each page of a head is
one contiguous 4 KiB run), and folds them into an online softmax (running max and sum).
Cost: 4 * sum(seq_len) * heads * head_dim FLOPs (two dot products per cached token); bytes:
the cached keys and values of the live tokens, queries, outputs, block table and lengths once.
The library row is torch's scaled_dot_product_attention on the same cache laid out contiguous
and padded to the longest sequence, with a mask: what one does without a paged kernel.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from rooflinectl_kernels.cost import declare, tensor_bytes
from rooflinectl_kernels.registry import KernelSpec, Target, Variant, register, tuned

PAGE = 16  # tokens per page
DECODE_CONFIGS = [
    triton.Config({"STEP": 64}, num_warps=4, num_stages=3),  # tokens per step: a multiple of PAGE
    triton.Config({"STEP": 128}, num_warps=4, num_stages=3),
    triton.Config({"STEP": 128}, num_warps=8, num_stages=2),
]


def _decode_cost(grid, metadata, args):
    q, cache = args["q"], args["k_cache"]
    live = args["live_tokens"]  # sum of sequence lengths, passed by the wrapper (never read from the device)
    heads, head_dim = q.shape[1], q.shape[2]
    kv_bytes = 2 * live * heads * head_dim * cache.element_size()
    return declare("paged_decode_kernel", family="attention", flops=4 * live * heads * head_dim, bits=32,
                   nbytes=kv_bytes + tensor_bytes(q, args["o"], args["block_table"], args["seq_lens"]))


@triton.autotune(configs=tuned(DECODE_CONFIGS), key=["max_pages", "HEAD_DIM"])
@triton.jit(launch_metadata=_decode_cost)
def paged_decode_kernel(q, k_cache, v_cache, block_table, seq_lens, o, sm_scale, n_heads, max_pages, live_tokens,
                        PAGE_SIZE: tl.constexpr, HEAD_DIM: tl.constexpr, STEP: tl.constexpr):
    seq = tl.program_id(0)
    head = tl.program_id(1)
    length = tl.load(seq_lens + seq)
    d = tl.arange(0, HEAD_DIM)
    query = tl.load(q + (seq * n_heads + head) * HEAD_DIM + d).to(tl.float32) * (sm_scale * 1.4426950408889634)
    m_i = tl.full((), -float("inf"), tl.float32)
    l_i = tl.full((), 0.0, tl.float32)
    acc = tl.zeros((HEAD_DIM,), dtype=tl.float32)
    for start in range(0, length, STEP):
        tokens = start + tl.arange(0, STEP)
        live = tokens < length
        page = tl.load(block_table + seq * max_pages + tokens // PAGE_SIZE, mask=live, other=0)
        # cache layout [pages, heads, PAGE_SIZE, HEAD_DIM]: a page of one head is contiguous
        slot = ((page.to(tl.int64) * n_heads + head) * PAGE_SIZE + tokens % PAGE_SIZE) * HEAD_DIM
        keys = tl.load(k_cache + slot[:, None] + d[None, :], mask=live[:, None], other=0.0).to(tl.float32)
        scores = tl.where(live, tl.sum(keys * query[None, :], axis=1), -1.0e6)
        m_new = tl.maximum(m_i, tl.max(scores, axis=0))
        p = tl.exp2(scores - m_new)
        alpha = tl.exp2(m_i - m_new)
        values = tl.load(v_cache + slot[:, None] + d[None, :], mask=live[:, None], other=0.0).to(tl.float32)
        acc = acc * alpha + tl.sum(p[:, None] * values, axis=0)
        l_i = l_i * alpha + tl.sum(p, axis=0)
        m_i = m_new
    tl.store(o + (seq * n_heads + head) * HEAD_DIM + d, (acc / l_i).to(o.dtype.element_ty))


def paged_decode(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, block_table: torch.Tensor,
                 seq_lens: torch.Tensor, live_tokens: int) -> torch.Tensor:
    """q [seqs, heads, head_dim]; caches [pages, heads, PAGE, head_dim]; block_table int32 [seqs, max_pages];
    seq_lens int32 [seqs] (each at least 1); live_tokens = sum of seq_lens (host int, for the cost)."""
    seqs, heads, head_dim = q.shape
    o = torch.empty_like(q)
    paged_decode_kernel[(seqs, heads)](q, k_cache, v_cache, block_table, seq_lens, o, 1.0 / math.sqrt(head_dim),
                                       heads, block_table.shape[1], live_tokens, PAGE_SIZE=k_cache.shape[2],
                                       HEAD_DIM=head_dim)
    return o


def padded_sdpa(q: torch.Tensor, k_padded: torch.Tensor, v_padded: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """torch without pages: caches [seqs, heads, max_len, head_dim] padded to the longest sequence."""
    return F.scaled_dot_product_attention(q[:, :, None, :], k_padded, v_padded, attn_mask=mask)[:, :, 0, :]


def _inputs(shape, device, dtype):
    seqs, heads, head_dim, max_len = shape["seqs"], shape["heads"], shape["head_dim"], shape["max_len"]
    lengths = torch.randint(max_len // 2, max_len + 1, (seqs,)).tolist()  # ragged: half to full length
    pages_per_seq = [math.ceil(n / PAGE) for n in lengths]
    n_pages, max_pages = sum(pages_per_seq), math.ceil(max_len / PAGE)
    physical = torch.randperm(n_pages).tolist()  # pages scattered through the pool
    table = torch.zeros(seqs, max_pages, dtype=torch.int32)
    k_cache = torch.randn(n_pages, heads, PAGE, head_dim, device=device, dtype=dtype)
    v_cache = torch.randn(n_pages, heads, PAGE, head_dim, device=device, dtype=dtype)
    k_padded = torch.zeros(seqs, heads, max_len, head_dim, device=device, dtype=dtype)
    v_padded = torch.zeros_like(k_padded)
    used = 0
    for s, count in enumerate(pages_per_seq):
        table[s, :count] = torch.tensor(physical[used:used + count], dtype=torch.int32)
        pages = torch.tensor(physical[used:used + count], device=device)
        for cache, padded in ((k_cache, k_padded), (v_cache, v_padded)):
            contiguous = cache[pages].permute(1, 0, 2, 3).reshape(heads, count * PAGE, head_dim)
            padded[s, :, :lengths[s]] = contiguous[:, :lengths[s]]
        used += count
    mask = torch.arange(max_len)[None, :] < torch.tensor(lengths)[:, None]
    return {"q": torch.randn(seqs, heads, head_dim, device=device, dtype=dtype), "k_cache": k_cache,
            "v_cache": v_cache, "block_table": table.to(device), "seq_lens": torch.tensor(lengths, dtype=torch.int32,
            device=device), "live_tokens": sum(lengths), "lengths": lengths, "k_padded": k_padded,
            "v_padded": v_padded, "mask": mask[:, None, None, :].to(device)}


def _reference(inputs):
    q, out = inputs["q"].float(), []
    for s, length in enumerate(inputs["lengths"]):
        k = inputs["k_padded"][s, :, :length].float()
        v = inputs["v_padded"][s, :, :length].float()
        weights = torch.softmax((k @ q[s][:, :, None])[..., 0] / math.sqrt(q.shape[-1]), dim=-1)
        out.append((weights[:, None, :] @ v)[:, 0, :])
    return torch.stack(out)


def _padded_cost(inputs):
    q, k = inputs["q"], inputs["k_padded"]
    return declare("F.scaled_dot_product_attention", family="attention", flops=4 * k.shape[0] * k.shape[1] * k.shape[2] * k.shape[3],
                   bits=32, nbytes=tensor_bytes(q, k, inputs["v_padded"], inputs["mask"]) + tensor_bytes(q))


register(KernelSpec(
    name="paged_decode",
    concept="paged KV cache: decode attention gathering pages through a block table, online softmax",
    family="attention",
    dtype=torch.bfloat16,
    # 64 sequences x 32 heads x 2048-4096 tokens x 128: about 3 GB of live KV cache
    shapes={"small": {"seqs": 3, "heads": 2, "head_dim": 16, "max_len": 70},
            "large": {"seqs": 64, "heads": 32, "head_dim": 128, "max_len": 4096}},
    make_inputs=_inputs,
    reference=_reference,
    variants=(
        Variant("paged", "triton", "kernel", lambda i: paged_decode(i["q"], i["k_cache"], i["v_cache"],
                                                                     i["block_table"], i["seq_lens"],
                                                                     i["live_tokens"]),
                autotuned=(paged_decode_kernel,)),
        Variant("sdpa padded", "torch", "library", lambda i: padded_sdpa(i["q"], i["k_padded"], i["v_padded"], i["mask"]),
                cost=_padded_cost, note="contiguous cache padded to the longest sequence, masked"),
    ),
    target=Target("roof", 0.70, "paged decode >= 70% of DRAM bandwidth"),
    atol_scale=0.1,  # outputs well below 1
))
