"""A KernelBench-like set of small problems for checking the cost model against Nsight Compute.

rooflinectl profile scripts/counters_suite.py:run_all --warmup 1 --iters 1 --counters ncu -o suite.profile.json

Each problem is an nn.Module whose class is named P_<problem>, so every kernel row's `module`
says which problem launched it (module_kind() maps it back). Shapes make the kind clear:
- gemm / conv: dimensions multiples of 128, no padded tiles: useful FLOPs should equal executed
  ones within 3%; gemm-padded ones (1000^3, a 50257-wide vocabulary) should not;
- stream: single-pass element-wise / reduction / copy kernels over 512 MiB fp32 tensors (8x the
  H200's 60 MiB L2): minimum bytes should match DRAM bytes within 20%;
- the rest (norms, softmax, reductions, attention, losses, small models) for the classification.
Meant for a GPU (bf16 mostly); it runs on CPU too, slowly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

BF16 = torch.bfloat16
STREAM_ELEMS = 128 * 2**20  # 512 MiB per fp32 tensor
Built = tuple[Callable, tuple[nn.Module, ...], tuple]  # fn(*inputs, *children), children, inputs


@dataclass
class Problem:
    name: str
    kind: str  # gemm, gemm-padded, conv, conv-other, stream, norm, softmax, reduction, attention, elementwise, loss, model
    build: Callable[[str], Built]


class ProblemModule(nn.Module):
    """Calls fn(*inputs, *children); children (layers with weights) belong to the module."""

    def __init__(self, fn: Callable, children: tuple[nn.Module, ...]) -> None:
        super().__init__()
        self.fn = fn
        self.layers = nn.ModuleList(children)

    def forward(self, *inputs):
        return self.fn(*inputs, *self.layers)


def _t(*shape: int, dtype: torch.dtype = BF16, device: str) -> torch.Tensor:
    return torch.randn(*shape, device=device, dtype=dtype)


def _mm(m: int, k: int, n: int, dtype: torch.dtype = BF16):
    return lambda dev: (torch.mm, (), (_t(m, k, dtype=dtype, device=dev), _t(k, n, dtype=dtype, device=dev)))


def _layer(layer_fn: Callable[[], nn.Module], shape: tuple[int, ...], *, channels_last: bool = False,
           dtype: torch.dtype = BF16):
    def build(dev: str) -> Built:
        layer = layer_fn().to(device=dev, dtype=dtype).eval()
        x = _t(*shape, dtype=dtype, device=dev)
        if channels_last:
            layer = layer.to(memory_format=torch.channels_last)
            x = x.contiguous(memory_format=torch.channels_last)
        return (lambda inp, mod: mod(inp)), (layer,), (x,)
    return build


def _fn(fn: Callable, *shapes: tuple[int, ...], dtype: torch.dtype = BF16):
    return lambda dev: (fn, (), tuple(_t(*s, dtype=dtype, device=dev) for s in shapes))


def _sdpa(causal: bool):
    def attend(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return lambda dev: (attend, (), tuple(_t(4, 16, 1024, 64, device=dev) for _ in range(3)))


def _naive_attention(dev: str) -> Built:
    def attend(q, k, v):
        return torch.softmax(q @ k.transpose(-2, -1) * 0.125, dim=-1) @ v
    return attend, (), tuple(_t(4, 16, 512, 64, device=dev) for _ in range(3))


def _cross_entropy(dev: str) -> Built:
    return F.cross_entropy, (), (_t(4096, 8192, device=dev), torch.randint(0, 8192, (4096,), device=dev))


def _embedding(dev: str) -> Built:
    table = nn.Embedding(50304, 768).to(device=dev, dtype=BF16)
    return (lambda ids, mod: mod(ids)), (table,), (torch.randint(0, 50304, (8, 1024), device=dev),)


def _model(make: Callable[[], nn.Module], shape: tuple[int, ...], channels_last: bool = False):
    return _layer(make, shape, channels_last=channels_last)


def _stream(fn: Callable, inputs: int):
    return lambda dev: (fn, (), tuple(torch.rand(STREAM_ELEMS, device=dev) for _ in range(inputs)))


PROBLEMS: list[Problem] = [
    Problem("mm_1024", "gemm", _mm(1024, 1024, 1024)),
    Problem("mm_tall", "gemm", _mm(8192, 1024, 1024)),
    Problem("mm_wide", "gemm", _mm(1024, 4096, 4096)),
    Problem("mm_fp16", "gemm", _mm(2048, 2048, 2048, torch.float16)),
    Problem("mm_fp32", "gemm", _mm(1024, 1024, 1024, torch.float32)),  # TF32 off (PyTorch's default): FFMA
    Problem("bmm", "gemm", _fn(torch.bmm, (16, 512, 512), (16, 512, 512))),
    Problem("linear_bias", "gemm", _layer(lambda: nn.Linear(1024, 4096), (2048, 1024))),
    Problem("linear_3d", "gemm", _layer(lambda: nn.Linear(1024, 1024, bias=False), (8, 512, 1024))),
    Problem("mm_odd", "gemm-padded", _mm(1000, 1000, 1000)),
    Problem("linear_vocab", "gemm-padded", _layer(lambda: nn.Linear(768, 50257, bias=False), (512, 768))),
    Problem("conv3x3", "conv", _layer(lambda: nn.Conv2d(128, 128, 3, padding=1, bias=False), (8, 128, 56, 56), channels_last=True)),
    Problem("conv1x1", "conv", _layer(lambda: nn.Conv2d(256, 256, 1, bias=False), (8, 256, 56, 56), channels_last=True)),
    Problem("conv3x3_stride2", "conv", _layer(lambda: nn.Conv2d(128, 256, 3, stride=2, padding=1, bias=False),
                                              (8, 128, 56, 56), channels_last=True)),
    Problem("conv1d", "conv", _layer(lambda: nn.Conv1d(256, 256, 3, padding=1, bias=False), (16, 256, 1024))),
    Problem("conv3d", "conv", _layer(lambda: nn.Conv3d(64, 64, 3, padding=1, bias=False), (2, 64, 16, 32, 32))),
    Problem("conv_depthwise", "conv-other", _layer(lambda: nn.Conv2d(256, 256, 3, padding=1, groups=256, bias=False),
                                                   (8, 256, 56, 56), channels_last=True)),
    Problem("conv_transpose", "conv-other", _layer(lambda: nn.ConvTranspose2d(128, 64, 4, stride=2, padding=1, bias=False),
                                                   (8, 128, 28, 28), channels_last=True)),
    Problem("layer_norm", "norm", _layer(lambda: nn.LayerNorm(4096), (4096, 4096))),
    Problem("rms_norm", "norm", _layer(lambda: nn.RMSNorm(4096), (4096, 4096))),
    Problem("batch_norm", "norm", _layer(lambda: nn.BatchNorm2d(128), (16, 128, 56, 56), channels_last=True)),
    Problem("group_norm", "norm", _layer(lambda: nn.GroupNorm(32, 128), (16, 128, 56, 56))),
    Problem("softmax", "softmax", _fn(lambda x: torch.softmax(x, dim=-1), (4096, 4096))),
    Problem("log_softmax", "softmax", _fn(lambda x: torch.log_softmax(x, dim=-1), (2048, 8192), dtype=torch.float32)),
    Problem("sum_rows", "reduction", _fn(lambda x: x.sum(dim=-1), (8192, 4096))),
    Problem("mean_all", "reduction", _fn(lambda x: x.mean(), (8192, 4096), dtype=torch.float32)),
    Problem("amax", "reduction", _fn(lambda x: x.amax(dim=0), (8192, 4096))),
    Problem("cumsum", "reduction", _fn(lambda x: x.cumsum(dim=-1), (1024, 4096), dtype=torch.float32)),
    Problem("sdpa", "attention", _sdpa(False)),
    Problem("sdpa_causal", "attention", _sdpa(True)),
    Problem("attention_naive", "attention", _naive_attention),
    Problem("gelu", "elementwise", _fn(F.gelu, (4096, 4096))),
    Problem("relu", "elementwise", _fn(F.relu, (4096, 4096))),
    Problem("swiglu", "elementwise", _fn(lambda a, b: F.silu(a) * b, (4096, 4096), (4096, 4096))),
    Problem("cross_entropy", "loss", _cross_entropy),
    Problem("embedding", "model", _embedding),
    Problem("mlp", "model", _model(lambda: nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024)),
                                   (2048, 1024))),
    Problem("transformer_layer", "model", _model(lambda: nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True,
                                                                                    dropout=0.0), (8, 256, 512))),
    Problem("cnn", "model", _model(lambda: nn.Sequential(nn.Conv2d(64, 128, 3, padding=1), nn.BatchNorm2d(128), nn.ReLU(),
                                                         nn.MaxPool2d(2), nn.Conv2d(128, 128, 3, padding=1),
                                                         nn.AdaptiveAvgPool2d(1)), (16, 64, 64, 64), channels_last=True)),
    Problem("stream_copy", "stream", _stream(torch.clone, 1)),
    Problem("stream_add", "stream", _stream(torch.add, 2)),
    Problem("stream_relu", "stream", _stream(torch.relu, 1)),
    Problem("stream_sum", "stream", _stream(torch.sum, 1)),
    Problem("stream_cast", "stream", _stream(lambda x: x.to(BF16), 1)),
    Problem("stream_scale", "stream", _stream(lambda x: x.mul_(0.5), 1)),
]


def module_kind(module_path: str) -> tuple[str, str] | None:
    """'P_conv3x3.layers.0' -> ('conv3x3', 'conv'): the problem and kind a row belongs to."""
    head = str(module_path).split(".", 1)[0]
    if not head.startswith("P_"):
        return None
    by_name = {p.name: p.kind for p in PROBLEMS}
    name = head[2:]
    return (name, by_name[name]) if name in by_name else None


def make_inputs():
    """Every problem built on the GPU (or CPU): (problem, module, inputs) triples."""
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    built = []
    for p in PROBLEMS:
        fn, children, inputs = p.build(device)
        module = type(f"P_{p.name}", (ProblemModule,), {})(fn, children)
        built.append((p, module, inputs))
    return (built,)


def run_all(problems) -> None:
    """Run each problem once (forward only, no autograd)."""
    with torch.no_grad():
        for _problem, module, inputs in problems:
            module(*inputs)
