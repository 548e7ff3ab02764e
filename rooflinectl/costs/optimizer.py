"""Optimiser updates and the multi-tensor (`_foreach_*`, `_amp_*`) ops they are made of.

A multi-tensor kernel walks lists of tensors: each tensor is read once (the same tensor in two
lists counts once) and each output written once; FLOPs per element of the first list as each
registration says. The fused optimisers read parameters, gradients and their state once and
write parameters and state once.
"""

from __future__ import annotations

from rooflinectl.costs.registry import NotModelled, OpCost, cost_formula
from rooflinectl.costs.tensors import OpCall, TensorArg, out_itemsize, unique_read_bytes


def _tensors(call: OpCall, *, skip: tuple[str, ...] = ()) -> list[TensorArg]:
    """Every tensor argument (lists flattened) except the named ones and pure out= ones."""
    sig = call.signature
    if sig is None:
        return call.tensors()
    found: list[TensorArg] = []
    for name, value in zip(sig.names, call.args):
        if name in skip or name in sig.out_only:
            continue
        if isinstance(value, TensorArg):
            found.append(value)
        elif isinstance(value, (list, tuple)):
            found.extend(t for t in value if isinstance(t, TensorArg))
    return found


def _recorded_list(call: OpCall, name: str) -> list[TensorArg]:
    """The tensor list `name`; a list recorded without shapes raises NotModelled (torch.profiler's
    Chrome trace leaves out the shapes of lists of more than 30 tensors; rooflinectl's own capture
    fills them in from the profiler's event tree)."""
    tensors = call.tensor_list(name)
    if not tensors:
        raise NotModelled("the trace recorded no shapes for this tensor list (torch.profiler's trace "
                          "leaves out lists of more than 30 tensors)")
    return tensors


def _foreach(call: OpCall, flops_per_element: float) -> OpCost | None:
    first = _recorded_list(call, "self")
    elems = sum(t.numel for t in first)
    writes_only_self = call.name in ("aten::_foreach_zero_", "aten::_foreach_copy_")
    read = unique_read_bytes(_tensors(call, skip=("self",) if writes_only_self else ()))
    written = sum(t.nbytes for t in first)
    inplace = call.name.endswith("_")
    note = "foreach: every list read once, " + ("the first list written in place" if inplace else "one output list written")
    return OpCost(flops_per_element * elems, float(read + written), "optimizer", first[0].dtype, note)


def _register_foreach(names: tuple[str, ...], flops_per_element: float) -> None:
    def formula(call: OpCall) -> OpCost | None:
        return _foreach(call, flops_per_element)

    formula.__doc__ = (f"foreach: {flops_per_element:g} FLOP per element of the first list; every tensor read "
                       "once, the first list (in place) or a new list written once")
    full = tuple(f"aten::_foreach_{n}" for n in names) + tuple(f"aten::_foreach_{n}_" for n in names)
    cost_formula(*full, family="optimizer")(formula)


_register_foreach(("add", "sub", "mul", "div", "sqrt", "rsqrt", "neg", "exp", "log", "reciprocal", "pow",
                   "sigmoid", "tanh"), 1)
_register_foreach(("addcmul", "addcdiv", "lerp"), 2)
_register_foreach(("copy", "zero", "maximum", "minimum", "clamp_min", "clamp_max", "sign", "abs"), 0)


@cost_formula("aten::_foreach_norm", "aten::_foreach_max", family="optimizer")
def foreach_reduce_cost(call: OpCall) -> OpCost | None:
    """(self, [ord, dtype]): one value per tensor: norm 2 FLOP per element (square, add), max 0;
    every tensor read once, one value per tensor written (`dtype`'s size when given)."""
    tensors = _recorded_list(call, "self")
    elems = sum(t.numel for t in tensors)
    per_element = 2.0 if call.name == "aten::_foreach_norm" else 0.0
    size = out_itemsize(call, tensors[0].itemsize, "dtype")
    return OpCost(per_element * elems, float(unique_read_bytes(tensors) + len(tensors) * size), "reduction",
                  tensors[0].dtype, "foreach reduction: every tensor read once, one value per tensor written")


@cost_formula("aten::_amp_foreach_non_finite_check_and_unscale_", family="optimizer")
def amp_unscale_cost(call: OpCall) -> OpCost | None:
    """(self, found_inf, inv_scale): each gradient multiplied by inv_scale in place (1 FLOP per
    element; the finiteness check is a comparison) and found_inf set: gradients read and written."""
    grads = _recorded_list(call, "self")
    elems = sum(t.numel for t in grads)
    scalars = sum(t.nbytes for t in (call.input("found_inf"), call.input("inv_scale")) if t is not None)
    return OpCost(float(elems), float(2 * unique_read_bytes(grads) + scalars), "optimizer",
                  grads[0].dtype, "AMP unscale: gradients read and written once")


@cost_formula("aten::_amp_update_scale_", family="optimizer")
def amp_update_scale_cost(call: OpCall) -> OpCost | None:
    """(self, growth_tracker, found_inf, ...): a few scalars read and written (a latency-bound
    one-thread kernel)."""
    tensors = _tensors(call)
    return OpCost(float(len(tensors)), float(2 * sum(t.nbytes for t in tensors)), "optimizer",
                  tensors[0].dtype if tensors else "fp32", "AMP scale update: scalars read and written")


@cost_formula("aten::_fused_adam_", "aten::_fused_adamw_", family="optimizer")
def fused_adam_cost(call: OpCall) -> OpCost | None:
    """(self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, ...): per parameter
    element, parameters, gradients and moments read once (4; 5 with amsgrad) and parameters and
    moments written once (3; 4); about 15 FLOP (moment updates, bias correction, sqrt, divide,
    weight decay)."""
    params = _recorded_list(call, "self")
    elems = sum(t.numel for t in params)
    lists = [call.tensor_list(n) for n in ("self", "grads", "exp_avgs", "exp_avg_sqs", "max_exp_avg_sqs")]
    read = sum(t.nbytes for lst in lists for t in lst)
    written = sum(t.nbytes for i in (0, 2, 3, 4) for t in lists[i])
    return OpCost(15.0 * elems, float(read + written), "optimizer", params[0].dtype,
                  "fused Adam: 4 reads and 3 writes per parameter element, 15 FLOP")


@cost_formula("aten::_fused_sgd_", family="optimizer")
def fused_sgd_cost(call: OpCall) -> OpCost | None:
    """(self, grads, momentum_buffer_list, weight_decay, momentum, lr, ...): per element, weight
    decay (2 FLOP, when set), momentum update (2, when there are buffers) and the step (2);
    parameters, gradients and buffers read once, parameters and buffers written once."""
    params = _recorded_list(call, "self")
    grads, buffers = (call.tensor_list(n) for n in ("grads", "momentum_buffer_list"))
    elems = sum(t.numel for t in params)
    per_element = 2.0 + (2.0 if buffers else 0.0) + (2.0 if call.get("weight_decay", 0) else 0.0)
    read = sum(t.nbytes for lst in (params, grads, buffers) for t in lst)
    written = sum(t.nbytes for lst in (params, buffers) for t in lst)
    return OpCost(per_element * elems, float(read + written), "optimizer", params[0].dtype,
                  "fused SGD: parameters, gradients, buffers read once; parameters, buffers written once")
