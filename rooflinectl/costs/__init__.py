"""The cost model: FLOPs and minimum bytes per op call, from one registry of formulas (the
registry imports the formula modules, and with them torch, at its first lookup)."""

from __future__ import annotations

from rooflinectl.costs.registry import (
    OpCost,
    bound,
    cost_formula,
    cost_of,
    explain_cost,
    has_formula,
    lookup,
    registered_ops,
)
from rooflinectl.costs.tensors import OpCall, TensorArg

# Ops that only change metadata (views) or allocate: they launch no kernel and cost nothing.
NO_WORK_OPS: frozenset[str] = frozenset(
    f"aten::{n}" for n in (
        "view", "_unsafe_view", "reshape", "as_strided", "t", "transpose", "permute", "expand",
        "expand_as", "squeeze", "unsqueeze", "flatten", "unflatten", "slice", "select", "narrow",
        "split", "split_with_sizes", "chunk", "unbind", "alias", "detach", "detach_", "lift_fresh",
        "empty", "empty_like", "empty_strided", "resolve_conj", "resolve_neg", "view_as",
        "_reshape_alias", "unfold", "diagonal", "numpy_T", "contiguous", "clone", "to", "_to_copy",
        "result_type", "is_nonzero", "item", "_local_scalar_dense", "size", "stride", "set_",
        "resize_", "record_stream", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like",
        "new_empty", "new_zeros", "new_ones", "new_full", "linear", "matmul", "dropout",
        "scaled_dot_product_attention", "cross_entropy_loss", "nll_loss", "nll_loss_nd",
        "batch_norm", "group_norm", "broadcast_tensors", "_has_compatible_shallow_copy_type", "conv1d", "conv2d", "conv3d", "stack", "repeat", "einsum",
    )
)
"""Composite ops (linear, matmul, to, clone, ...) do their work through children that carry the
cost; listing them here stops the CPU path from counting their overhead as unknown work."""

__all__ = ["NO_WORK_OPS", "OpCall", "OpCost", "TensorArg", "bound", "cost_formula", "cost_of", "explain_cost",
           "has_formula", "lookup", "registered_ops"]
