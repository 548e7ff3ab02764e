"""Reference kernels: the classic GPU techniques as Triton kernels placed on the roofline.

Installed as the package `rooflinectl_kernels` from this folder (pyproject.toml maps the name to
`kernels/`; the name `kernels` belongs to Hugging Face's package and is never installed). Each
module is one family; importing the package registers every reference kernel in `KERNELS`, in
teaching order. `rooflinectl kernels` runs them. Set TRITON_INTERPRET=1 before the first import
to run them on the CPU through Triton's interpreter (the kernels are decorated at import).
"""

from __future__ import annotations

import importlib

from rooflinectl_kernels.registry import KERNELS, KernelSpec, Variant

KERNEL_MODULES = ("coalescing", "softmax", "matmul", "norms", "fusion", "attention", "quantized", "grouped_gemm",
                  "paged_attention")
for _module in KERNEL_MODULES:
    importlib.import_module(f"rooflinectl_kernels.{_module}")

__all__ = ["KERNELS", "KERNEL_MODULES", "KernelSpec", "Variant"]
