"""Short readable kernel names: C++ template kernels are unreadable in a table or chart."""

from __future__ import annotations

import re

_HINT = re.compile(r"([A-Za-z_]\w*(?:Functor|Impl|Kernel|Op|Func|Reduce|Softmax|Norm|Gelu|Copy|Add|Mul)\w*)")


def _top_level_cut(name: str, opener: str) -> int:
    """Index of the first `opener` outside <...>, or -1."""
    depth = 0
    for i, ch in enumerate(name):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == opener and depth == 0:
            return i
    return -1


def short_kernel_name(name: str, max_len: int = 48) -> str:
    """'void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(...)...>(int, ...)'
    -> 'vectorized_elementwise_kernel<GeluCUDAKernelImpl>'."""
    text = name.strip()
    if text.startswith("void "):
        text = text[5:]
    cut = _top_level_cut(text, "(")
    if cut > 0:
        text = text[:cut]
    base, _, targs = text.partition("<")
    base = base.split("::")[-1] if "::" in base and not base.startswith("aten::") else base
    hint = ""
    if targs:
        inner = base.lower()
        for match in _HINT.findall(targs):
            candidate = match.split("::")[-1]
            if candidate.lower() not in inner and not candidate.startswith("at"):
                hint = candidate
                break
        if not hint:
            hint = targs.split(",")[0].split("::")[-1].strip(" >")
    short = (f"{base}<{hint}>" if hint else base).strip()
    return short if len(short) <= max_len else short[: max_len - 1] + "…"
