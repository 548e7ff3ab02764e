"""Which tensors each op read and wrote, from a stopped profiler's event tree (profile_memory on):
what the analytic memory level (analysis/memory_levels.py) needs to tell whether a kernel's input
was written just before it (still in L2) or long ago (in DRAM), issue 29.

Shapes and launch order alone cannot: `mul(grad, saved_activation)` in a backward pass reads two
tensors of one shape, one written by the kernel before it, the other in the forward pass. The
event tree can: each op's inputs carry their storage's address (`storage_data_ptr`), and the
allocations an op makes (its outputs) sit inside it as `[memory]` events with theirs (`ptr`).
Private API: when it is missing, the analysis falls back to shapes.

A tensor is known by its address, not by the profiler's allocation identity: a cache holds lines
by address, and the caching allocator hands a freed block, whose lines may still be cached, to the
next tensor of its size. Keyed by allocation, the destination of a cast or copy (`copy_` into a
fresh tensor: a backward's bf16 gradients and activations made fp32) was a tensor never seen before,
so its bytes were charged in DRAM; by address it lands in a block whose lines were touched not long
before, still in the L2, as the H200's warm-cache counters see it. Held to the same counters, the
analytic level agreed on 4.0-4.1 more points of memory-bound time on a Llama-style training step,
0.9-1.0 on GPT-2, 0.5 on ResNet-50 (docs/benchmarks/accuracy.md, "Tensors known by address").

An op's record is flat integers: reads as (identity, bytes) pairs, then writes the same way. An
input's bytes are its view's extent (a stride-0 broadcast reads one row, not the expanded
tensor); a write's are the allocation's size, less allocations freed inside the op (workspaces).
"""

from __future__ import annotations

from typing import Any

import torch

# Ops whose accesses are kept, the latest first (the steady state ends a run): the walk costs ~30 us
# an op (8.6 s for 300,000 on the CPU here), and the earlier ops of a long run fall back to shapes.
MAX_ACCESS_OPS = 200_000
_ITEM_BYTES: dict[Any, int] = {}


def tensor_accesses(prof: torch.profiler.profile) -> dict[tuple[str, int], tuple[list[int], list[int]]]:
    """(op name, start ns of the profiler's clock) -> (reads, writes), each [identity, bytes, ...],
    for every op that read or wrote a tensor ({} when the tree or its identities are missing)."""
    try:
        roots = prof.profiler.kineto_results.experimental_event_tree()
    except Exception:  # noqa: BLE001 - optional, private API
        return {}
    out: dict[tuple[str, int], tuple[list[int], list[int]]] = {}
    for root in reversed(roots):
        if len(out) >= MAX_ACCESS_OPS:
            break
        _walk(root, out)
    return out


def _walk(root: Any, out: dict[tuple[str, int], tuple[list[int], list[int]]]) -> None:
    """Post-order over one root's subtree: each op's live allocations are those of its children
    plus its own, less those freed inside it; an op keeps its reads and those writes."""
    # (node, child iterator, live allocations {identity: bytes}) per level of the walk
    stack: list[tuple[Any, Any, dict[int, int]]] = [(root, iter(root.children), {})]
    while stack:
        node, children, live = stack[-1]
        child = next(children, None)
        if child is not None:
            fields = child.extra_fields
            if type(fields).__name__ == "_ExtraFields_Allocation":
                _allocation(fields, live)
            elif child.children or hasattr(fields, "inputs"):
                stack.append((child, iter(child.children), {}))
            continue
        stack.pop()
        inputs = getattr(node.extra_fields, "inputs", None)
        if inputs is not None and len(out) < MAX_ACCESS_OPS:
            reads = _reads(inputs)
            writes = [v for pair in live.items() for v in pair]
            if reads or writes:
                out[(node.name, int(node.start_time_ns))] = (reads, writes)
        if stack:
            stack[-1][2].update(live)  # what stays allocated belongs to the op around it too


def _allocation(fields: Any, live: dict[int, int]) -> None:
    identity = fields.ptr or (fields.allocation_id if fields.allocation_id is not None else fields.id)
    size = int(fields.alloc_size)
    if identity is None:
        return
    if size > 0:
        live[int(identity)] = size
    else:
        live.pop(int(identity), None)  # freed inside the op: a workspace, not an output


def _reads(inputs: Any) -> list[int]:
    out: list[int] = []
    for value in inputs:
        for tensor in (value if isinstance(value, list) else (value,)):
            identity = _identity(tensor)
            if identity is not None:
                out += (identity, _view_bytes(tensor))
    return out


def _identity(tensor: Any) -> int | None:
    """The address of the tensor's storage (a freed block given to a new tensor keeps it: its lines
    are the same cache lines), else the profiler's allocation or tensor identity; None for a
    non-tensor or an unknown one."""
    if not hasattr(tensor, "storage_data_ptr"):
        return None
    identity = tensor.storage_data_ptr or (tensor.allocation_id if tensor.allocation_id is not None else tensor.id)
    return None if identity is None else int(identity)


def _view_bytes(tensor: Any) -> int:
    """Bytes a view spans: 1 + sum((size - 1) * stride) elements (a broadcast's stride 0 reads
    one copy), times the element size."""
    sizes, strides = list(tensor.sizes or ()), list(tensor.strides or ())
    if any(s == 0 for s in sizes):
        return 0
    if len(strides) == len(sizes):
        extent = 1 + sum((size - 1) * abs(stride) for size, stride in zip(sizes, strides))
    else:
        extent = 1
        for size in sizes:
            extent *= size
    return extent * _item_bytes(tensor.dtype)


def _item_bytes(dtype: Any) -> int:
    size = _ITEM_BYTES.get(dtype)
    if size is None:
        try:
            size = torch.empty((), dtype=dtype).element_size()
        except Exception:  # noqa: BLE001 - an odd dtype: count a byte per element
            size = 1
        _ITEM_BYTES[dtype] = size
    return size
