"""The independent side of the cost audit (tests/test_costs_audit.py): bytes recorded from the real
tensors, never from the cost model.

- `executed_bytes(fn)`: every aten op the dispatcher runs under a TorchDispatchMode (what runs
  once autograd and composite ops are decomposed), each reading its input storages once and
  writing its outputs once; views move nothing; arguments an op takes for their shape or to
  overwrite are not read (ARGUMENTS_NOT_READ, each named).
- `minimum_bytes(inputs, outputs)`: the case's own minimum: its input tensors read once, its
  outputs written once (an in-place case writes its mutated input).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

# op (overload packet name) -> argument names it takes without reading their values
ARGUMENTS_NOT_READ: dict[str, tuple[str, ...]] = {
    "nll_loss_backward": ("self",),  # only the shape of the log-probabilities: grad_input is zeroed, then scattered
    "max_pool2d_with_indices_backward": ("self",),  # the input's shape: the indices say where
    "max_pool3d_with_indices_backward": ("self",),
    "avg_pool2d_backward": ("self",),
    "_adaptive_avg_pool2d_backward": ("self",),
    "copy_": ("self",), "fill_": ("self",), "zero_": ("self",), "normal_": ("self",), "uniform_": ("self",),
    "empty_like": ("self",), "zeros_like": ("self",), "ones_like": ("self",), "full_like": ("self",),
    "new_empty": ("self",), "new_zeros": ("self",), "new_ones": ("self",), "new_full": ("self",),
    "new_empty_strided": ("self",), "resize_": ("self",),
}


# A gather reads only the elements it selects, a scatter writes only its targets: the argument
# (by name) counted at the selected elements, not its whole storage.
GATHERS = {"index": "self", "_unsafe_index": "self", "index_select": "self", "gather": "self",
           "embedding": "weight"}
SCATTERS = ("index_put_", "_index_put_impl_", "index_put", "scatter_", "scatter_add_", "scatter_reduce_",
            "index_add_")


def _selected_bytes(name: str, args: tuple, kwargs: dict, schema_args: list, out: Any) -> int | None:
    """The named gather/scatter rule: bytes read and written by the selected elements only (None:
    the op is no gather or scatter)."""
    named = {a.name: (args[i] if i < len(args) else kwargs.get(a.name)) for i, a in enumerate(schema_args)}
    if name in GATHERS:
        source = named[GATHERS[name]]
        others = [t for k, v in named.items() if k != GATHERS[name] for t in _tensors(v)]
        result = _tensors(out)[0]
        return _distinct(others) + 2 * result.numel() * source.element_size()
    if name == "nll_loss_forward":
        target = named["target"]
        return _distinct(_tensors(named.get("weight"))) + target.numel() * (target.element_size()
                                                                           + named["self"].element_size()) + 8
    if name in SCATTERS:
        self_ = named["self"]
        if name.startswith(("index_put", "_index_put")):
            targets = self_[tuple(named["indices"])].numel()
            moved = _distinct([t for t in _tensors(named["indices"])]) + footprint_bytes(named["values"])
        elif name == "index_add_":
            targets = named["source"].numel()
            moved = _distinct([named["index"], named["source"]])
        else:
            targets = named["index"].numel()
            moved = _distinct([named["index"]] + _tensors(named.get("src")))
        accumulates = bool(named.get("accumulate")) or "add" in name or "reduce" in name
        return moved + targets * self_.element_size() * (2 if accumulates else 1)
    return None


def footprint_bytes(t: torch.Tensor) -> int:
    """Bytes of storage a tensor spans: a broadcast (stride 0) view reads its source once."""
    if t.numel() == 0:
        return 0
    span = 1 + sum((n - 1) * abs(s) for n, s in zip(t.shape, t.stride()))
    return min(span, t.numel()) * t.element_size()


def _distinct(tensors: Iterable[torch.Tensor]) -> int:
    seen: dict[int, int] = {}
    for t in tensors:
        key = t.untyped_storage().data_ptr() if t.numel() else id(t)
        seen[key] = max(seen.get(key, 0), footprint_bytes(t))
    return sum(seen.values())


def minimum_bytes(inputs: Iterable[torch.Tensor], outputs: Iterable[torch.Tensor]) -> int:
    return _distinct(inputs) + sum(t.numel() * t.element_size() for t in outputs)


def _tensors(value: Any) -> list[torch.Tensor]:
    return [t for t in tree_flatten(value)[0] if isinstance(t, torch.Tensor)]


class _Recorder(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, int]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = func.overloadpacket.__name__
        skipped = ARGUMENTS_NOT_READ.get(name, ())
        schema_args = func._schema.arguments
        read = [t for i, a in enumerate(args) if not (i < len(schema_args) and schema_args[i].name in skipped)
                for t in _tensors(a)]
        read += [t for k, v in kwargs.items() if k not in skipped for t in _tensors(v)]
        outputs = _tensors(out)
        mutates = any(a.alias_info is not None and a.alias_info.is_write for a in schema_args)
        inputs_storage = {t.untyped_storage().data_ptr() for t in _tensors(args) if t.numel()}
        selected = _selected_bytes(name, args, kwargs, schema_args, out)
        if selected is not None:
            moved = selected
        elif not mutates and outputs and all(t.numel() == 0 or t.untyped_storage().data_ptr() in inputs_storage
                                           for t in outputs):
            moved = 0  # a view: no traffic
        else:
            moved = minimum_bytes(read, outputs)
        self.calls.append((name, moved))
        return out


def executed_bytes(fn: Callable[[], Any]) -> tuple[int, list[tuple[str, int]]]:
    """(total bytes, per dispatched op) of one run of fn."""
    with _Recorder() as recorder:
        fn()
    return sum(b for _, b in recorder.calls), recorder.calls
