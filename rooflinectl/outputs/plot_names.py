"""Short, readable names for kernel groups: what a chart label and a legend row can hold.

GPU kernel names are C++ signatures with nested templates and lambdas, often 300 characters
long. A chart label needs ~20 characters that a person recognises ("gelu", "mm · fc1"); the
legend table beside the chart keeps the longer identity (op, module, shortened kernel).
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

# Kernel base names that say nothing by themselves: use their first template argument instead.
_GENERIC_BASES = {"kernel", "kernel2", "device_kernel", "kernel_entry", "launch_kernel", "cutlass_kernel"}
# Functor names inside template arguments that tell what an element-wise kernel computes.
_FUNCTOR = re.compile(r"\b([A-Za-z][A-Za-z0-9_]*?)(?:CUDAKernelImpl|CUDAKernel|Functor|_kernel_cuda|KernelImpl)\b")


def _split_top_level(text: str) -> tuple[str, str]:
    """Split 'name<targs>(params)' at depth 0 into (name, template-args); params are dropped."""
    depth = 0
    base_end = None
    targs_start = targs_end = None
    for i, ch in enumerate(text):
        if ch in "<(":
            if depth == 0 and ch == "<" and targs_start is None and base_end is None:
                base_end, targs_start = i, i + 1
            elif depth == 0 and ch == "(" and base_end is None:
                base_end = i
            depth += 1
        elif ch in ">)":
            depth -= 1
            if depth == 0 and targs_start is not None and targs_end is None and ch == ">":
                targs_end = i
    base = text[: base_end if base_end is not None else len(text)]
    targs = text[targs_start:targs_end] if targs_start is not None and targs_end is not None else ""
    return base, targs


def shorten_kernel_name(name: str, max_chars: int = 32) -> str:
    """A recognisable short form of a kernel name: namespaces, templates and parameters removed.

    'void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl...>(...)'
    -> 'elementwise[gelu]'; 'void cutlass::Kernel2<cutlass_80_wmma_..._align8>(...)'
    -> 'cutlass_80_wmma_tensorop_bf16…'.
    """
    text = name.strip().replace("(anonymous namespace)::", "")
    if text.startswith("void "):
        text = text[5:]
    base, targs = _split_top_level(text)
    base = base.strip().split("::")[-1] or base.strip()
    short = base
    if base.lower() in _GENERIC_BASES and targs:
        first = _split_top_level(targs.split(",")[0].strip())[0].split("::")[-1]
        short = first or base
    else:
        functor = _FUNCTOR.search(targs)
        if functor:
            short = f"{base.removesuffix('_kernel').removeprefix('vectorized_')}[{functor.group(1).lower()}]"
    return ellipsize(short, max_chars)


def ellipsize(text: str, max_chars: int) -> str:
    """Cut text to max_chars with an ellipsis at the end (the start of a name is the informative part)."""
    return text if len(text) <= max_chars else text[: max(1, max_chars - 1)] + "…"


def op_at_module(op: str, module: str, max_chars: int) -> str:
    """'addmm · …h.0.mlp.c_fc': the op whole where it fits, the module cut from the left (the end
    of a module path is its most specific part: every GPT-2 block starts 'GPT2LMHeadModel.tra')."""
    if not module:
        return ellipsize(op, max_chars)
    room = max_chars - len(op) - 3
    if room < 6:
        return ellipsize(f"{op} · {module}", max_chars)
    return f"{op} · {module if len(module) <= room else '…' + module[len(module) - room + 1:]}"


def short_op(op: str) -> str:
    """'aten::_softmax' -> '_softmax'; Triton and other names lose their namespace too."""
    return op.split("::")[-1] if op else ""


def _field(row: Any, name: str) -> str:
    value = row.get(name, "") if isinstance(row, pd.Series) else getattr(row, name, "")
    return "" if value is None or (isinstance(value, float) and value != value) else str(value)


def group_label(row: Any, max_chars: int = 24) -> str:
    """The label a person reads next to a point: op and innermost module, else the short kernel.

    row: a kernel-table row as a Series or an itertuples() tuple.
    """
    op = short_op(_field(row, "op"))
    parts = _field(row, "module").split(".")
    module = ".".join(parts[-2:]) if len(parts) > 1 and parts[-1] == op else parts[-1]
    if not op:
        return shorten_kernel_name(_field(row, "kernel"), max_chars)
    return ellipsize(f"{op} · {module}" if module else op, max_chars)
