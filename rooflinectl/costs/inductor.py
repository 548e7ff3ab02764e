"""Costs of the kernels torch.compile's Inductor generates, and the aten ops each one fused.

Sources, each named in the cost note:
- Bytes of a Triton kernel: Inductor's own estimate (`kernel_num_gb` in the args of the op named
  after the kernel, with benchmark_kernel on): the buffers the kernel reads and writes, slices
  counted as read, in-place buffers twice. Better than a sum of the argument buffers, which
  counts a whole embedding table for a gather (tests compare both).
- Bytes of a C++ kernel: its buffers as the generated wrapper allocates them (capture/run/inductor.py):
  inputs read once, outputs written once, in-place buffers read and written.
- FLOPs: Inductor's `kernel_flop` counts matmul-like ops only (flop_counter's registry), 0 for
  element-wise math. Where it is 0 or absent we count our own: the FLOPs per element of each
  distinct fused op (the registered formula, evaluated on one element) times the kernel's
  elements. A lower bound: an op the fusion applies twice is counted once.
The fused ops come from the kernel's name, which Inductor builds from the original aten ops
(config.triton.descriptive_names = "original_aten", its default).
"""

from __future__ import annotations

import functools
import math
import re
from typing import Any

from rooflinectl.costs.registry import OpCost, cost_of, lookup
from rooflinectl.costs.tensors import TORCH_DTYPES, OpCall, TensorArg

_PREFIX = re.compile(r"^(?:graph_\d+_)?(?:triton_(?P<kind>[a-z]+)|cpp)_fused_?")
_SUFFIX = re.compile(r"_\d+$")
# The family a fused kernel takes from its ops, strongest first; gemm/conv/attention ops in a
# generated (non-template) kernel's name are origins of layout or epilogue work, not the matmul.
_FAMILY_ORDER = ("norm", "softmax", "loss", "reduction", "index", "elementwise", "copy")
_PER_ELEMENT_FAMILIES = frozenset({"elementwise", "reduction", "norm", "softmax", "loss"})
_PROBE_ELEMENTS = 1024


@functools.lru_cache(maxsize=8192)  # asked once per launch of a long run, about a few hundred names
def is_generated_kernel(name: str) -> bool:
    """A kernel Inductor generated: Triton (triton_poi/red/per/tem/for_...) or C++ (cpp_fused_...)."""
    return _PREFIX.match(name) is not None and "fused" in name


@functools.lru_cache(maxsize=1)
def _aten_names() -> frozenset[str]:
    import torch  # the dispatcher's op names: the vocabulary kernel names are built from

    return frozenset(n.split("::", 1)[1] for n in torch._C._dispatch_get_all_op_names() if n.startswith("aten::"))


@functools.lru_cache(maxsize=4096)
def fused_ops(kernel: str) -> tuple[str, ...]:
    """The aten ops a generated kernel fused, from its name (longest known op name first):
    triton_poi_fused_add_mul_pow_tanh_view_5 -> (add, mul, pow, tanh, view)."""
    match = _PREFIX.match(kernel)
    if match is None:
        return ()
    tokens = _SUFFIX.sub("", kernel[match.end():]).split("_")
    vocabulary = _aten_names()
    ops: list[str] = []
    i = 0
    while i < len(tokens):
        for j in range(len(tokens), i, -1):
            candidate = "_".join(tokens[i:j])
            if candidate in vocabulary:
                ops.append(candidate)
                i = j
                break
        else:
            if tokens[i]:
                ops.append(tokens[i])  # not an aten op name: kept as Inductor wrote it
            i += 1
    return tuple(dict.fromkeys(ops))


def fused_label(kernel: str) -> str:
    """The op column of a generated kernel: "fused(add, mul, pow, tanh, view)"."""
    return f"fused({', '.join(fused_ops(kernel))})"


def _family(kernel: str) -> str:
    match = _PREFIX.match(kernel)
    if match is not None and match.group("kind") == "tem":
        return "conv" if any("conv" in op for op in fused_ops(kernel)) else "gemm"
    families = {entry.family for op in fused_ops(kernel) if (entry := lookup(f"aten::{op}")) is not None}
    found = next((f for f in _FAMILY_ORDER if f in families), None)
    if found is not None:
        return found
    return "reduction" if match is not None and match.group("kind") in ("red", "per") else "elementwise"


@functools.lru_cache(maxsize=1024)
def flops_per_element(op: str) -> float | None:
    """FLOPs per element of an element-wise, reduction or normalisation op: its registered formula
    evaluated on a one-row fp32 call of _PROBE_ELEMENTS elements; None for other families."""
    entry = lookup(f"aten::{op}")
    if entry is None or entry.family not in _PER_ELEMENT_FAMILIES:
        return None
    row = TensorArg((_PROBE_ELEMENTS,), "fp32", 4)
    matrix = TensorArg((1, _PROBE_ELEMENTS), "fp32", 4)
    for args in ((row, row, row), (row, row), (row,), (matrix, [_PROBE_ELEMENTS], row, row, 1e-5),
                 (matrix, -1, False)):
        cost = cost_of(OpCall(name=f"aten::{op}", args=args))
        if cost is not None:
            return cost.flops / _PROBE_ELEMENTS
    return None


def _our_flops(kernel: str, elements: float) -> tuple[float, str]:
    counted = {op: f for op in fused_ops(kernel) if (f := flops_per_element(op))}
    per_element = sum(counted.values())
    detail = " + ".join(f"{op} {f:g}" for op, f in counted.items()) or "no arithmetic op"
    return per_element * elements, f"{per_element:g} FLOP/element ({detail}) x {elements:g} elements"


def _kernel_elements(call: OpCall) -> float | None:
    """A Triton kernel's iteration space: the product of its trailing integer arguments
    (xnumel, r0_numel, ...: Inductor passes them after the buffers)."""
    sizes: list[int] = []
    for value in reversed(call.args):
        if isinstance(value, bool) or not isinstance(value, int):
            break
        sizes.append(value)
    return float(math.prod(sizes)) if sizes else None


def triton_kernel_cost(kernel: str, inductor_args: dict[str, Any], call: OpCall) -> OpCost | None:
    """The cost of one launch of an Inductor Triton kernel, from its profiler op (see the module doc)."""
    num_gb = inductor_args.get("kernel_num_gb")
    if not isinstance(num_gb, (int, float)):
        return None
    dtype = next((t.dtype for t in call.tensors() if t.dtype.startswith(("fp", "bf"))), "")
    family = _family(kernel)
    inductor_flops = inductor_args.get("kernel_flop")
    if isinstance(inductor_flops, (int, float)) and inductor_flops > 0:
        flops, flop_note = float(inductor_flops), "FLOPs: Inductor (kernel_flop)"
    else:
        elements = _kernel_elements(call)
        if elements is None:
            return None
        flops, detail = _our_flops(kernel, elements)
        flop_note = f"FLOPs: ours, {detail} (Inductor's kernel_flop counts matmul-like ops only)"
    return OpCost(flops, float(num_gb) * 1e9, family, dtype,
                  f"Inductor kernel: bytes from Inductor (kernel_num_gb); {flop_note}")


def cpp_kernel_cost(kernel: str, buffers: list[dict[str, Any]] | None) -> OpCost | None:
    """The cost of one call of an Inductor C++ kernel from its buffers (capture/run/inductor.py)."""
    if not buffers:
        return None
    total = 0.0
    largest = 0
    dtype = ""
    for buffer in buffers:
        short, itemsize = TORCH_DTYPES.get(buffer["dtype"], ("", 0))
        if not itemsize:
            return None
        numel = math.prod(buffer["shape"])
        total += numel * itemsize * (2 if buffer["role"] == "in_out" else 1)
        largest = max(largest, numel)
        if not dtype and short.startswith(("fp", "bf")):
            dtype = short
    flops, detail = _our_flops(kernel, float(largest))
    return OpCost(flops, total, _family(kernel), dtype,
                  "Inductor C++ kernel: bytes from the buffers in its generated wrapper (inputs read once, "
                  f"outputs written once, in-place twice); FLOPs: ours, {detail}")


def buffer_bytes(call: OpCall) -> float:
    """Sum of the tensor arguments' sizes: an independent upper-bound check of Inductor's
    kernel_num_gb for kernels without in-place buffers (a gather reads less than its table)."""
    return float(sum(t.nbytes for t in call.tensors()))


__all__ = ["buffer_bytes", "cpp_kernel_cost", "flops_per_element", "fused_label", "fused_ops",
           "is_generated_kernel", "triton_kernel_cost"]
