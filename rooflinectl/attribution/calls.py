"""Turn a recorded CPU op (RawOp) into the OpCall the cost model reads."""

from __future__ import annotations

import ast
import re
from typing import Any

from rooflinectl.capture.read.raw import RawOp
from rooflinectl.costs.tensors import (
    PROFILER_DTYPES,
    TORCH_DTYPES,
    UNKNOWN_DTYPE,
    OpCall,
    TensorArg,
)


def parse_concrete(text: Any) -> Any:
    """Concrete inputs arrive as strings ("1", "0.", "[0, 1]", "False"); "" means not recorded.

    ast.literal_eval evaluates literals only: a profile never runs code.
    """
    if not isinstance(text, str):
        return text
    if text == "":
        return None
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _at(values: list[Any], i: int) -> Any:
    return values[i] if i < len(values) else None


def _tensor(dims: Any, strides: Any, dtype: tuple[str, int], storage: Any) -> TensorArg:
    return TensorArg(
        shape=tuple(int(n) for n in dims),
        dtype=dtype[0],
        itemsize=dtype[1],
        strides=tuple(int(s) for s in strides) if isinstance(strides, list) and len(strides) == len(dims) else None,
        storage=storage if isinstance(storage, int) and storage else None,
    )


def op_call(op: RawOp, children: list[RawOp] | None = None) -> OpCall:
    """Positional inputs as TensorArg, list of TensorArg, parsed scalar/list, or None, with the
    profiler's type names; `children` (the op's direct child ops) give hints for ops whose
    recorded inputs do not determine their output (see _hints)."""
    args: list[Any] = []
    for i, type_name in enumerate(op.input_types):
        dims = _at(op.input_dims, i)
        strides = _at(op.input_strides, i)
        storage = _at(op.input_storages, i)
        if type_name in PROFILER_DTYPES and isinstance(dims, list):
            args.append(_tensor(dims, strides, PROFILER_DTYPES[type_name], storage))
        elif type_name == "TensorList" and isinstance(dims, list):
            names = _at(op.list_dtypes, i) or []
            storages = storage if isinstance(storage, list) else []
            items = []
            for j, d in enumerate(dims):
                if not isinstance(d, list):
                    continue
                # a bare Chrome trace records no dtype for list elements: unknown, never guessed
                dtype = TORCH_DTYPES.get(_at(names, j) or "", UNKNOWN_DTYPE)
                s = _at(strides, j) if isinstance(strides, list) else None
                items.append(_tensor(d, s, dtype, _at(storages, j)))
            args.append(items)
        else:
            args.append(parse_concrete(_at(op.concrete_inputs, i)))
    return OpCall(name=op.name, args=tuple(args), types=tuple(op.input_types), hints=_hints(op, children or []))


INDEX_OPS = ("aten::index", "aten::_unsafe_index", "aten::index_put_", "aten::_index_put_impl_", "aten::index_put",
             "aten::_unsafe_index_put")


def _hints(op: RawOp, children: list[RawOp]) -> tuple[tuple[str, Any], ...]:
    """aten::index and index_put record no index tensors (the profiler skips Tensor?[] lists), but
    their implementation views `self` through as_strided with the indexed result's sizes and stride
    0 along the index dims (restride_src): that child's sizes and strides are the output's shape
    (`index_view`). A boolean mask shows as the input of a nonzero or masked_fill_ child
    (`index_mask`: its shape)."""
    if op.name == "aten::nonzero":  # its output's [count, ndim]: the restride (CPU) or resize (CUDA) of a child
        sized = [parse_concrete(_at(c.concrete_inputs, 1)) for c in children
                 if c.name in ("aten::as_strided_", "aten::resize_")]
        sized = [s for s in sized if isinstance(s, list) and len(s) == 2]
        return (("nonzero_out", tuple(sized[-1])),) if sized else ()
    if op.name not in INDEX_OPS or not op.input_dims:
        return ()
    found: list[tuple[str, Any]] = []
    for child in children:
        if child.name == "aten::as_strided" and child.input_dims and child.input_dims[0] == op.input_dims[0] \
                and not any(key == "index_view" for key, _ in found):
            sizes, strides = (parse_concrete(_at(child.concrete_inputs, i)) for i in (1, 2))
            if isinstance(sizes, list) and isinstance(strides, list) and len(sizes) == len(strides) and 0 in strides:
                found.append(("index_view", (tuple(sizes), tuple(strides))))
        elif child.name in ("aten::nonzero", "aten::masked_fill_") and len(child.input_types) > 0:
            position = 0 if child.name == "aten::nonzero" else 1
            if _at(child.input_types, position) == "bool" and isinstance(_at(child.input_dims, position), list) \
                    and not any(key == "index_mask" for key, _ in found):
                found.append(("index_mask", tuple(int(n) for n in child.input_dims[position])))
    return tuple(found)


def shapes_text(call: OpCall) -> str:
    """The op's tensor input shapes, e.g. '[64, 128] x [128, 256]' (lists in parentheses)."""
    parts = []
    for a in call.args:
        if isinstance(a, TensorArg):
            parts.append(str(list(a.shape)))
        elif isinstance(a, list) and a and all(isinstance(t, TensorArg) for t in a):
            inner = ", ".join(str(list(t.shape)) for t in a[:4]) + (", ..." if len(a) > 4 else "")
            parts.append(f"({inner})")
    return " x ".join(parts)


_SHAPE = re.compile(r"\[([^\[\]]*)\]")


def parse_shapes(text: Any) -> list[tuple[int, ...]]:
    """shapes_text read back: '[64, 128] x [128, 256]' -> [(64, 128), (128, 256)]; the shapes of
    a list input ('([2, 3], [4])') each on their own; unparsable pieces are skipped."""
    shapes: list[tuple[int, ...]] = []
    for body in _SHAPE.findall(str(text or "")):
        try:
            shapes.append(tuple(int(p) for p in body.replace(" ", "").split(",") if p != ""))
        except ValueError:
            continue
    return shapes


def cost_key(op: RawOp, children: list[RawOp] | None = None) -> tuple[Any, ...]:
    """What an op's call (op_call) depends on: its name, its recorded inputs, which inputs are the
    same tensor (the pattern, not the pointers) and the hints its children give. Ops that share
    input lists (capture/read/builder.py stores equal lists once) share a key by the lists' identity, so a
    million launches of a few distinct calls are costed a few times; the lists live as long as
    the trace, so an identity is not reused."""
    storages = _alias_pattern(op.input_storages) if op.input_storages else ()
    dtypes = tuple(tuple(d) if isinstance(d, list) else d for d in op.list_dtypes) if op.list_dtypes else ()
    return (op.name, id(op.input_dims), id(op.input_types), id(op.input_strides), id(op.concrete_inputs),
            storages, dtypes, _hints(op, children or []))


def _alias_pattern(storages: list[Any]) -> tuple[Any, ...]:
    """Each tensor identity replaced by the position where it first appears (0 or None: unknown)."""
    first: dict[int, int] = {}

    def mark(value: Any) -> Any:
        if isinstance(value, list):
            return tuple(mark(v) for v in value)
        if isinstance(value, int) and value:
            return first.setdefault(value, len(first))
        return None

    return tuple(mark(v) for v in storages)
