"""Pooling and upsampling, forward and backward.

Max pooling compares only (0 FLOPs, as Nsight Compute counts no float add/mul for it); average
pooling adds each window's elements and divides once (one FLOP per window element). Upsampling
weighs 2^d taps per output element for a d-dimensional linear interpolation (2*taps - 1 FLOPs:
a multiply per tap, adds between them; bicubic 16 taps per 2-d output), nearest copies (0).
Backward passes scatter each grad_output element back to its taps (one multiply-add per tap,
one add for nearest and max).
Bytes: the input read once, outputs written once (int64 indices as well for the
`_with_indices` ops); backward reads grad_output (and indices), writes grad_input once. Windows
overlap, so a kernel may re-read input rows from cache: not counted.
"""

from __future__ import annotations

import math
import re

import torch

from rooflinectl.costs.registry import OpCost, cost_formula
from rooflinectl.costs.tensors import OpCall


def _at(values: object, i: int, default: int) -> int:
    if isinstance(values, int):
        return values
    if isinstance(values, (list, tuple)) and values:
        return int(values[i] if i < len(values) else values[-1])
    return default


def pool_out_shape(x: tuple[int, ...], kernel: object, stride: object, padding: object, dilation: object,
                   ceil_mode: bool, spatial: int) -> tuple[int, ...]:
    """Output shape of a max or average pool over the last `spatial` dims (PyTorch's
    pooling_output_shape, ceil_mode included); an empty stride means stride = kernel."""
    lead, dims = x[:len(x) - spatial], []
    for i in range(spatial):
        size, k = x[len(x) - spatial + i], _at(kernel, i, 1)
        s = _at(stride, i, k) if stride not in (None, []) else k
        p, d = _at(padding, i, 0), _at(dilation, i, 1)
        span = size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)
        out = span // s + 1
        if ceil_mode and (out - 1) * s >= size + p:
            out -= 1
        dims.append(out)
    return (*lead, *dims)


def _spatial(name: str) -> int:
    found = re.search(r"(\d)d", name)
    return int(found.group(1)) if found else 2


def _window(kernel: object, spatial: int) -> int:
    return math.prod(_at(kernel, i, 1) for i in range(spatial))


@cost_formula("aten::max_pool1d_with_indices", "aten::max_pool2d_with_indices", "aten::max_pool3d_with_indices",
              "aten::max_pool1d", "aten::max_pool2d", "aten::max_pool3d", "aten::avg_pool1d", "aten::avg_pool2d",
              "aten::avg_pool3d", family="reduction")
def pool_cost(call: OpCall) -> OpCost | None:
    """(self, kernel_size, stride, padding, [dilation,] ceil_mode, ...): max 0 FLOPs, average one
    per window element; input read once, output written once (plus int64 indices for
    _with_indices: the values-only max_pool ops write none)."""
    x = call.input("self")
    spatial = _spatial(call.name)
    out = math.prod(pool_out_shape(x.shape, call.get("kernel_size"), call.get("stride"), call.get("padding", 0),
                                   call.get("dilation", 1), bool(call.get("ceil_mode", False)), spatial))
    average = call.name.startswith("aten::avg_pool")
    indices = call.name.endswith("_with_indices")
    flops = out * _window(call.get("kernel_size"), spatial) if average else 0
    written = out * (x.itemsize + (8 if indices else 0))
    return OpCost(float(flops), float(x.footprint_bytes() + written), "reduction", x.dtype,
                  "pooling: input read once, output" + (" and int64 indices" if indices else "") + " written once")


@cost_formula("aten::max_pool2d_with_indices_backward", "aten::max_pool3d_with_indices_backward",
              "aten::adaptive_max_pool2d_backward", "aten::adaptive_max_pool3d_backward", family="reduction")
def max_pool_backward_cost(call: OpCall) -> OpCost | None:
    """(grad_output, self, ..., indices): each grad_output element added to the input position
    its index names (1 FLOP); reads grad_output and the indices, writes grad_input (self's
    shape; self itself is not read)."""
    g, x, idx = call.input("grad_output"), call.input("self"), call.input("indices")
    return OpCost(float(g.numel), float(g.footprint_bytes() + idx.footprint_bytes() + x.numel * g.itemsize),
                  "reduction", g.dtype, "max-pool backward: grad_output and indices read, grad_input written")


@cost_formula("aten::avg_pool2d_backward", "aten::avg_pool3d_backward", family="reduction")
def avg_pool_backward_cost(call: OpCall) -> OpCost | None:
    """(grad_output, self, kernel_size, ...): each grad_output element spread over its window
    (one FLOP per window element); reads grad_output, writes grad_input."""
    g, x = call.input("grad_output"), call.input("self")
    flops = g.numel * _window(call.get("kernel_size"), _spatial(call.name))
    return OpCost(float(flops), float(g.footprint_bytes() + x.numel * g.itemsize), "reduction", g.dtype,
                  "average-pool backward: grad_output read, grad_input written")


@cost_formula("aten::_adaptive_avg_pool2d", "aten::_adaptive_avg_pool3d", "aten::adaptive_max_pool2d",
              "aten::adaptive_max_pool3d", family="reduction")
def adaptive_pool_cost(call: OpCall) -> OpCost | None:
    """(self, output_size): average adds every input element once (1 FLOP each), max compares (0);
    input read once, output written once (and int64 indices for max)."""
    x = call.input("self")
    size = list(call.get("output_size") or [])
    out = math.prod(x.shape[:len(x.shape) - len(size)]) * math.prod(size)
    maximum = "max" in call.name
    written = out * (x.itemsize + (8 if maximum else 0))
    return OpCost(0.0 if maximum else float(x.numel), float(x.footprint_bytes() + written), "reduction", x.dtype,
                  "adaptive pooling: input read once, output written once")


@cost_formula("aten::_adaptive_avg_pool2d_backward", "aten::_adaptive_avg_pool3d_backward", family="reduction")
def adaptive_avg_pool_backward_cost(call: OpCall) -> OpCost | None:
    """(grad_output, self): one FLOP per grad_input element (its share of the output's grad);
    reads grad_output, writes grad_input."""
    g, x = call.input("grad_output"), call.input("self")
    return OpCost(float(x.numel), float(g.footprint_bytes() + x.numel * g.itemsize), "reduction", g.dtype,
                  "adaptive average-pool backward: grad_output read, grad_input written")


_TAPS = {"nearest": 1, "linear": 2, "bilinear": 4, "trilinear": 8, "bicubic": 16}


def _mode(name: str) -> str:
    found = re.search(r"upsample_(nearest|linear|bilinear|trilinear|bicubic)", name)
    return found.group(1) if found else "nearest"


def upsample_out_shape(x: tuple[int, ...], output_size: object, scale_factors: object, spatial: int) -> tuple[int, ...]:
    """Output shape from output_size, else from floor(size * scale) per spatial dim."""
    lead = x[:len(x) - spatial]
    if isinstance(output_size, (list, tuple)) and output_size:
        return (*lead, *(int(n) for n in output_size))
    scales = list(scale_factors) if isinstance(scale_factors, (list, tuple)) else []
    dims = [int(math.floor(x[len(x) - spatial + i] * float(scales[i] if i < len(scales) else 1.0)))
            for i in range(spatial)]
    return (*lead, *dims)


_UPSAMPLE = [f"aten::{prefix}{mode}{d}d" for prefix in ("upsample_", "_upsample_")
             for mode, d in (("nearest", 1), ("nearest", 2), ("nearest", 3), ("nearest_exact", 1),
                             ("nearest_exact", 2), ("nearest_exact", 3), ("linear", 1), ("bilinear", 2),
                             ("trilinear", 3), ("bicubic", 2))] + ["aten::_upsample_bilinear2d_aa",
                                                                   "aten::_upsample_bicubic2d_aa"]


def _existing(names: list[str]) -> tuple[str, ...]:
    """The names this torch has (the _aa variants are recent)."""
    return tuple(n for n in names if hasattr(torch.ops.aten, n.split("::")[1]))


@cost_formula(*_existing(_UPSAMPLE), family="copy")
def upsample_cost(call: OpCall) -> OpCost | None:
    """(self|input, output_size, [align_corners,] scales | scale_factors): 2*taps - 1 FLOPs per
    output element (nearest: 0); input read once, output written once."""
    x = call.input("self") or call.input("input")
    spatial = _spatial(call.name)
    out = math.prod(upsample_out_shape(x.shape, call.get("output_size"), call.get("scale_factors"), spatial))
    taps = _TAPS[_mode(call.name)]
    return OpCost(float((2 * taps - 1) * out if taps > 1 else 0), float(x.footprint_bytes() + out * x.itemsize),
                  "copy", x.dtype, f"upsample ({taps} taps): input read once, output written once")


@cost_formula(*_existing([f"{n}_backward" for n in _UPSAMPLE]), family="copy")
def upsample_backward_cost(call: OpCall) -> OpCost | None:
    """(grad_output, output_size, input_size, ...): each grad_output element added into its taps
    (2 FLOPs per tap, 1 for nearest); reads grad_output, writes grad_input (input_size) once."""
    g = call.input("grad_output")
    taps = _TAPS[_mode(call.name)]
    grad_input = math.prod(int(n) for n in call.get("input_size"))
    flops = g.numel * (2 * taps if taps > 1 else 1)
    return OpCost(float(flops), float(g.footprint_bytes() + grad_input * g.itemsize), "copy", g.dtype,
                  f"upsample backward ({taps} taps): grad_output read, grad_input written once")

