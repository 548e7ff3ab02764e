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
        # metadata and allocation only (issue 34): a restride, an uninitialised tensor, a 0-d wrap
        "as_strided_", "new_empty_strided", "scalar_tensor", "real", "type_as", "squeeze_", "unsqueeze_",
        "t_", "transpose_", "view_as_real", "view_as_complex", "lift", "pad",
        # composites whose children do all their work
        "embedding_backward", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
        "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "_convolution_mode", "instance_norm",
        "feature_dropout", "alpha_dropout", "movedim", "moveaxis", "swapaxes", "swapdims", "tensor_split",
        "meshgrid", "sum_to_size", "fliplr", "flipud", "bilinear", "slice_backward", "select_backward",
        "diagonal_backward", "as_strided_scatter_backward",
    )
)
"""Composite ops (linear, matmul, to, clone, ...) do their work through children that carry the
cost; listing them here stops the CPU path from counting their overhead as unknown work."""

HELPER_OPS: frozenset[str] = frozenset(f"aten::{n}" for n in ("fill_", "zero_", "copy_", "arange", "linspace",
                                                               "nonzero"))
"""Child ops that prepare an op's buffers (zero or fill the output, copy the input contiguous, an
index ramp, a boolean mask's positions) while the op does its own work in its body: the CPU path counts them on top of the op's
cost (nll_loss_backward's zero fill, a sort's copies). Any other costed child means the op
delegates its work to its children (rms_norm, logsumexp, softmax with a dtype): they are what runs."""

__all__ = ["HELPER_OPS", "NO_WORK_OPS", "OpCall", "OpCost", "TensorArg", "bound", "cost_formula", "cost_of", "explain_cost",
           "has_formula", "lookup", "registered_ops"]
