"""The cost model: FLOPs and minimum bytes of every piece of work a profile holds, through one
entry point, `explain_cost(source)` / `cost_of(source)` (costs/sources.py). The source's type
picks the formula; attribution builds the source from the trace and decides which one a kernel
has, and never computes a cost itself. The sources:

- registry formulas: an aten op's call (`OpCall`), by the formula registered for its op or
  overload (`cost_formula`, costs/registry.py; element-wise, reductions, norms, memory ops,
  optimizers, pooling ...). Each documents its approximations.
- torch's FLOP counter: the GEMM, convolution and attention formulas take their FLOPs from
  `torch.utils.flop_counter`'s registry (costs/torch_flops.py) and add the bytes.
- custom-op fallback: a `torch.library` or extension op with no formula costs its inputs and
  outputs, FLOPs unknown (costs/custom_ops.py; an `OpCall` too). A formula registered for it wins.
- collectives: NCCL kernels and gloo work (`Collective`): the bus bytes over the link, as
  nccl-tests count them (costs/collectives.py).
- declared by Inductor: a generated Triton kernel's bytes from its `kernel_num_gb`, FLOPs from
  `kernel_flop` or ours (`InductorTritonLaunch`); a generated C++ kernel's from the buffers of
  its wrapper (`InductorCppCall`) (costs/inductor.py).
- declared by a Triton kernel: its launch_metadata, as capture/run/triton_hook.py summarised it, held
  to the unit and width it declares (`TritonDeclaration`, costs/triton_declared.py).
- from Triton launch arguments: an undeclared Triton kernel's minimum bytes from the tensors it
  was passed, FLOPs unknown (`TritonArguments`).
- transfers: a memset or memcpy's size from the trace (`Transfer`, costs/transfers.py).

The registry imports the formula modules, and with them torch, at its first lookup; importing
this package does not (advise and plot read OpCost without costing a call).
"""

from __future__ import annotations

from rooflinectl.costs.collectives import Collective
from rooflinectl.costs.registry import (
    OpCost,
    bound,
    cost_formula,
    has_formula,
    lookup,
    registered_ops,
)
from rooflinectl.costs.sources import (
    InductorCppCall,
    InductorTritonLaunch,
    Transfer,
    TritonArguments,
    TritonDeclaration,
    cost_of,
    explain_cost,
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

__all__ = ["HELPER_OPS", "NO_WORK_OPS", "Collective", "InductorCppCall", "InductorTritonLaunch", "OpCall", "OpCost",
           "TensorArg", "Transfer", "TritonArguments", "TritonDeclaration", "bound", "cost_formula", "cost_of",
           "explain_cost", "has_formula", "lookup", "registered_ops"]
