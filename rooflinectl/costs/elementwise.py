"""Element-wise ops: FLOPs per output element from a table, bytes from the tensors' sizes.

Convention (documented in the README): one FLOP per element for each arithmetic or
transcendental step (add, mul, div, exp, erf, ...), zero for moves, comparisons, selections,
sign/abs and clamps: what Nsight Compute counts as FADD/FMUL/FFMA is close to this for simple
ops; transcendental functions run on the SFU and are counted here as one FLOP each.
Bytes: each input storage read once (a broadcast operand reads its source only), the output
written once; in-place ops read and write `self`; tensors past the op's inputs are `out=` args.
"""

from __future__ import annotations

import math

from rooflinectl.costs.registry import OpCost, cost_formula
from rooflinectl.costs.tensors import (
    SCALAR_TYPE_CODES,
    OpCall,
    TensorArg,
    broadcast_shape,
    is_float,
    unique_read_bytes,
)


def operands(call: OpCall) -> tuple[list[TensorArg], TensorArg | None]:
    """(tensors the op reads, the out= tensor it writes): every tensor argument but a pure out=
    one is an operand (element-wise ops broadcast all of them); an unbound call's tensors are
    all operands."""
    sig = call.signature
    if sig is None:
        return call.tensors(), None
    reads, out = [], None
    for name, value in zip(sig.names, call.args):
        if isinstance(value, TensorArg):
            if name in sig.out_only:
                out = value
            else:
                reads.append(value)
    return reads, out


def widest_dtype(tensors: list[TensorArg]) -> str:
    """The dtype mixed inputs compute in: the widest floating input (bf16 + fp32 runs in fp32; a
    0-d operand, a wrapped scalar, does not promote), else the widest integer or bool input."""
    floats = [t for t in tensors if is_float(t.dtype)]
    pool = [t for t in floats if t.shape] or floats or [t for t in tensors if t.shape] or tensors
    return max(pool, key=lambda t: t.itemsize).dtype


def elementwise_cost(
    call: OpCall,
    *,
    flops_per_element: float,
    out_itemsize: int | None = None,
    n_outputs: int = 1,
    family: str = "elementwise",
    note: str = "",
) -> OpCost | None:
    """Cost of an op whose output has the broadcast shape of its tensor operands."""
    inputs, out = operands(call)
    if not inputs:
        return None
    out_shape = broadcast_shape(t.shape for t in inputs)
    numel = 1
    for n in out_shape:
        numel *= n
    first = inputs[0]
    math_dtype = widest_dtype(inputs)
    if call.signature is not None and "self" in call.signature.written and out is None:
        out_size = first.itemsize  # in place: self is written
    elif out is not None:
        out_size = out.itemsize
    else:
        # The output takes the value operands' dtype: where(cond, x, y) writes x's dtype, not bool.
        # (the widest non-scalar float operand: type promotion, roughly).
        floats = [t for t in inputs if is_float(t.dtype)]
        shaped = [t for t in floats if t.shape]
        value = max(shaped, key=lambda t: t.itemsize) if shaped else (floats[0] if floats else first)
        out_size = out_itemsize or value.itemsize
    written = numel * out_size * n_outputs
    read = unique_read_bytes(inputs)
    return OpCost(
        flops=float(flops_per_element * numel),
        bytes=float(read + written),
        family=family,
        dtype=math_dtype,
        note=(note or f"element-wise: {flops_per_element:g} FLOP/element; inputs read once, output written once")
        + ("" if is_float(math_dtype) else "; integer/boolean ops, not floating-point FLOPs"),
    )


def _register(names: tuple[str, ...], flops_per_element: float, *, bool_out: bool = False,
              family: str = "elementwise") -> None:
    def formula(call: OpCall) -> OpCost | None:
        return elementwise_cost(call, flops_per_element=flops_per_element, out_itemsize=1 if bool_out else None,
                                family=family)

    formula.__doc__ = (
        f"{flops_per_element:g} FLOP per output element (the broadcast of the tensor operands, each read once)"
        + ("; bool output" if bool_out else "")
    )
    cost_formula(*names, family=family)(formula)


def _with_inplace(*names: str) -> tuple[str, ...]:
    return tuple(f"aten::{n}" for n in names) + tuple(f"aten::{n}_" for n in names)


# Unary arithmetic / transcendental: 1 FLOP per element.
_register(_with_inplace("neg", "reciprocal", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p",
                        "sqrt", "rsqrt", "sin", "cos", "tan", "tanh", "sigmoid", "erf", "erfc",
                        "erfinv", "square", "logit"), 1)
# Activations: arithmetic steps per element.
_register(_with_inplace("gelu"), 5)  # x * 0.5 * (1 + erf(x / sqrt(2))): mul, erf, add, mul, mul
_register(_with_inplace("silu"), 4)  # x / (1 + exp(-x)): exp, add, div, mul
_register(_with_inplace("mish"), 6)  # x * tanh(softplus(x))
_register(_with_inplace("elu", "selu", "celu") + ("aten::softplus",), 3)
_register(_with_inplace("hardswish", "hardsigmoid"), 3)
_register(_with_inplace("leaky_relu"), 1)
# Moves, selections, clamps, sign: 0 FLOP (no float add/mul/fma is executed).
_register(_with_inplace("relu", "clamp_min", "clamp_max", "clamp", "hardtanh", "abs", "sign",
                        "floor", "ceil", "round", "trunc", "frac", "bitwise_not", "logical_not",
                        "relu6", "nan_to_num"), 0)
# Binary arithmetic: 1 FLOP per element (alpha != 1 folds into an FMA: still counted as 1).
_register(_with_inplace("add", "sub", "mul", "div", "true_divide", "floor_divide",
                        "remainder", "fmod", "pow", "atan2", "xlogy", "hypot", "copysign") + ("aten::rsub",), 1)
_register(_with_inplace("bitwise_and", "bitwise_or", "bitwise_xor")
          + ("aten::maximum", "aten::minimum", "aten::fmax", "aten::fmin"), 0)
_register(_with_inplace("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or",
                        "logical_xor") + ("aten::isnan", "aten::isinf", "aten::isfinite", "aten::isneginf",
                                          "aten::isposinf", "aten::signbit"), 0, bool_out=True)
# Ternary.
_register(_with_inplace("addcmul", "addcdiv", "lerp"), 2)
_register(("aten::where", "aten::masked_fill", "aten::masked_fill_"), 0)
# Backward of activations: grad and the saved input (or output) in, grad out.
_register(("aten::threshold_backward", "aten::hardtanh_backward"), 0)
_register(("aten::sigmoid_backward", "aten::tanh_backward"), 3)
_register(("aten::gelu_backward",), 10)
_register(("aten::silu_backward",), 8)
_register(("aten::mse_loss_backward",), 3)  # (grad, self, target): 2 * grad * (self - target)
_register(("aten::leaky_relu_backward", "aten::hardsigmoid_backward"), 1)
_register(("aten::hardswish_backward", "aten::elu_backward"), 3)
_register(("aten::softplus_backward",), 4)
_register(("aten::mish_backward",), 8)
# max(x, y) and min(x, y) are the element-wise overloads of aten::max/min (the others reduce).
_register(("aten::max.other", "aten::min.other", "aten::max.out", "aten::min.out"), 0)
# grad * mask * scale: the bool mask selects, the scale is one multiply.
_register(("aten::native_dropout_backward",), 1)


@cost_formula("aten::fill_", "aten::zero_", "aten::normal_", "aten::uniform_", "aten::bernoulli_",
              "aten::random_", "aten::exponential_", family="elementwise")
def fill_cost(call: OpCall) -> OpCost | None:
    """Writes `self` once and reads nothing (random fills count no FLOPs)."""
    out = call.input("self")
    if out is None:
        return None
    return OpCost(0.0, float(out.nbytes), "elementwise", out.dtype, "fill: output written once")


@cost_formula("aten::native_dropout", family="elementwise")
def dropout_cost(call: OpCall) -> OpCost | None:
    """Reads the input, writes the output and a bool mask; 1 FLOP per element (the scale)."""
    x = call.input("input")
    if x is None:
        return None
    return OpCost(float(x.numel), float(2 * x.nbytes + x.numel), "elementwise", x.dtype,
                  "dropout: input read, output and bool mask written")


@cost_formula("aten::arange", family="elementwise")
def arange_cost(call: OpCall) -> OpCost | None:
    """(start, end, step, dtype | out): ceil((end - start) / step) elements written, 1 FLOP each
    (start + i * step); the element size from `dtype`, the out= tensor's dtype, else int64 for
    integer bounds and fp32 (the default dtype) otherwise."""
    start, end, step = call.get("start", 0), call.get("end"), call.get("step", 1)
    if not all(isinstance(v, (int, float)) for v in (start, end, step)) or step == 0:
        return None
    numel = max(math.ceil((end - start) / step), 0)
    out = call.input("out")
    integral = all(isinstance(v, int) and not isinstance(v, bool) for v in (start, end, step))
    default = (out.dtype, out.itemsize) if out is not None else (("int64", 8) if integral else ("fp32", 4))
    code = call.get("dtype")
    dtype, itemsize = SCALAR_TYPE_CODES.get(code, default) if isinstance(code, int) else default
    return OpCost(float(numel), float(numel * itemsize), "elementwise", dtype, "arange: output written once")
