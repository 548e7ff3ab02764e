"""The op families of issue 34 on CUDA, large enough that DRAM traffic is the kernel's own:
every case moves more than 4x the H200's 60 MB L2, so Nsight Compute's cold-cache DRAM bytes are
what the kernels read and wrote, and the analytic bytes (executed, with min_bytes beside them)
can be held against them.

rooflinectl profile scripts/costs_gpu_cases.py:run_all --warmup 1 --iters 1 --counters ncu -o costs.profile.json

Each case is an nn.Module named C_<case>, so every kernel row's module says which case launched
it; scripts/costs_gpu_report.py prints one FIGURE line per row. Backward ops are called directly
(torch.ops.aten...), so no autograd graph is built. Runs on CPU too (--device cpu sizes: /64).
"""

from __future__ import annotations

import os
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

aten = torch.ops.aten
BF16, FP32, I64 = torch.bfloat16, torch.float32, torch.int64
SCALE = int(os.environ.get("COSTS_SCALE", "1"))  # divides the sizes (CPU checks of this script)
N = 64 * 2**20 // SCALE  # 64 Mi elements: 256 MB fp32, 512 MB int64, 128 MB bf16
SIDE = int(8192 / SCALE ** 0.5)  # square matrices: 8192^2 fp32 = 256 MB


def _rows(n: int, width: int) -> tuple[int, int]:
    return max(n // width, 1), width


Case = tuple[str, Callable[[str], tuple[Callable, tuple]]]


def _r(shape, dtype=FP32):
    return lambda dev: torch.randn(*shape, device=dev, dtype=dtype)


def _cases() -> list[Case]:
    r, w = _rows(N, 4096)
    flat, mat, mat_bf = (N,), (r, w), (r, w)

    def make(fn: Callable, *makers: Callable[[str], torch.Tensor]) -> Callable[[str], tuple[Callable, tuple]]:
        return lambda dev: (fn, tuple(m(dev) for m in makers))

    ints = lambda dev: torch.randint(0, 1000, (N,), device=dev, dtype=I64)  # noqa: E731
    mask = lambda dev: torch.rand(*mat, device=dev) > 0.5  # noqa: E731
    rows_idx = lambda dev: torch.randint(0, r, (r,), device=dev)  # noqa: E731
    cols_idx = lambda dev: torch.randint(0, w, (r,), device=dev)  # noqa: E731
    many_i = lambda dev: torch.randint(0, r, (N // 4,), device=dev)  # noqa: E731
    many_j = lambda dev: torch.randint(0, w, (N // 4,), device=dev)  # noqa: E731
    vocab, dim = 32768, 1024
    tokens = lambda dev: torch.randint(0, vocab, (N // dim,), device=dev)  # noqa: E731
    b, c = max(N // 32000, 1), 32000
    targets = lambda dev: torch.randint(0, c, (b,), device=dev)  # noqa: E731
    img = (max(N // (32 * 128 * 128), 1), 64, 128, 128)  # 256 MB bf16
    pooled = (img[0], 64, 64, 64)
    return [
        ("add_fp32", make(torch.add, _r(flat), _r(flat))),
        ("add_bf16_fp32", make(torch.add, _r(flat, BF16), _r(flat))),
        ("mul_int64", make(torch.mul, ints, ints)),
        ("add_int64_scalar", make(lambda x: x + 3, ints)),
        ("cast_bf16_fp32", make(lambda x: x.float(), _r(flat, BF16))),
        ("cast_fp32_bf16", make(lambda x: x.to(BF16), _r(flat))),
        ("relu_bf16", make(torch.relu, _r(flat, BF16))),
        ("gt_bool", make(lambda x: x > 0, _r(flat))),
        ("isneginf", make(torch.isneginf, _r(flat))),
        ("where", make(torch.where, mask, _r(mat), _r(mat))),
        ("masked_fill", make(lambda x, m: x.masked_fill(m, 0.0), _r(mat), mask)),
        ("flip", make(lambda x: x.flip(0), _r(mat))),
        ("tril", make(torch.tril, _r((SIDE, SIDE)))),
        ("clamp", make(lambda x: x.clamp(-1, 1), _r(flat))),
        ("pow", make(lambda x: x.pow(2), _r(flat))),
        ("sum_rows_fp32", make(lambda x: x.sum(-1), _r(mat))),
        ("sum_int64", make(lambda x: x.sum(), ints)),
        ("sum_bool", make(lambda m: m.sum(), mask)),
        ("mean_bf16", make(lambda x: x.mean(-1), _r(mat_bf, BF16))),
        ("amax", make(lambda x: x.amax(-1), _r(mat))),
        ("cumsum_int64", make(lambda x: x.view(-1, 4096).cumsum(-1), ints)),
        ("softmax_fp32", make(lambda x: x.softmax(-1), _r(mat))),
        ("log_softmax_bf16", make(lambda x: x.log_softmax(-1), _r(mat_bf, BF16))),
        ("softmax_upcast", make(lambda x: torch.softmax(x, -1, dtype=FP32), _r(mat_bf, BF16))),
        ("logsumexp", make(lambda x: torch.logsumexp(x, -1), _r(mat))),
        ("rms_norm_bf16", make(lambda x: F.rms_norm(x, (w,)), _r(mat_bf, BF16))),
        ("rms_norm_fp32", make(lambda x: F.rms_norm(x, (w,)), _r(mat))),
        ("layer_norm_bf16", make(lambda x: F.layer_norm(x, (w,)), _r(mat_bf, BF16))),
        ("index_select", make(lambda x, i: x.index_select(0, i), _r(mat), rows_idx)),
        ("index_two_tensors", make(lambda x, i, j: x[i, j], _r(mat), many_i, many_j)),
        ("index_bool_mask", make(lambda x, m: x[m], _r(mat), mask)),
        ("index_put_mask", make(lambda x, m: x.__setitem__(m, 0.0), _r(mat), mask)),
        ("index_put_accumulate", make(lambda x, i, j, v: x.index_put_((i, j), v, accumulate=True), _r(mat),
                                      many_i, many_j, _r((N // 4,)))),
        ("index_put_broadcast", make(lambda x, i, v: x.index_put_((i,), v), _r(mat), rows_idx, _r((w,)))),
        ("gather", make(lambda x, i: x.gather(1, i.view(-1, 1).expand(-1, 64).contiguous()), _r(mat), cols_idx)),
        ("scatter_add", make(lambda x, i, s: x.scatter_add_(0, i.view(-1, 1).expand(-1, w), s), _r(mat), rows_idx,
                             _r(mat))),
        ("embedding_bf16", make(F.embedding, tokens, _r((vocab, dim), BF16))),
        ("embedding_backward", make(lambda g, t: aten.embedding_dense_backward(g, t, vocab, -1, False),
                                    _r((N // dim, dim)), tokens)),
        ("nll_loss_backward", make(lambda lp, t: aten.nll_loss_backward(torch.ones((), device=lp.device), lp, t,
                                                                        None, 1, -100, torch.tensor(float(b),
                                                                                                    device=lp.device)),
                                   _r((b, c)), targets)),
        ("max_pool2d_indices", make(lambda x: F.max_pool2d(x, 2, return_indices=True), _r(img, BF16))),
        ("max_pool2d_backward", make(lambda g, x: aten.max_pool2d_with_indices_backward(
            g, x, [2, 2], [2, 2], [0, 0], [1, 1], False, F.max_pool2d(x, 2, return_indices=True)[1]),
            _r(pooled, BF16), _r(img, BF16))),
        ("avg_pool2d", make(lambda x: F.avg_pool2d(x, 2), _r(img, BF16))),
        ("cat", make(lambda x, y: torch.cat([x, y]), _r(mat), _r(mat))),
        ("pad", make(lambda x: F.pad(x, (1, 1)), _r(mat))),
        ("reflection_pad1d", make(lambda x: F.pad(x, (3, 3), mode="reflect"), _r((r, 16, w // 16)))),
        ("transpose_copy", make(lambda x: x.t().contiguous(), _r((SIDE, SIDE)))),
        ("arange_int64", make(lambda x: torch.arange(N, device=x.device), _r((1,)))),
        ("linspace", make(lambda x: torch.linspace(0, 1, N, device=x.device), _r((1,)))),
        ("zero_fill", make(lambda x: x.zero_(), _r(flat))),
        ("argsort", make(lambda x: x.argsort(-1), _r((SIDE // 2, SIDE // 2)))),
    ]


class CaseModule(nn.Module):
    def __init__(self, fn: Callable) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *inputs):
        return self.fn(*inputs)


def make_inputs():
    """Every case built on the GPU (or CPU): (name, module, inputs) triples."""
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    built = []
    for name, build in _cases():
        fn, inputs = build(device)
        built.append((name, type(f"C_{name}", (CaseModule,), {})(fn), inputs))
    return (built,)


def run_all(cases) -> None:
    """Run each case once (no autograd)."""
    with torch.no_grad():
        for _name, module, inputs in cases:
            module(*inputs)
