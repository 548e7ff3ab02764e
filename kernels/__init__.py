"""Reference kernels: the classic GPU lessons as Triton kernels placed on the roofline.

Importable as `rooflinectl_kernels` (the repo folder is `kernels/`; the name `kernels` belongs to
Hugging Face's package and is never installed). Each module is one lesson family; importing the
package registers every lesson in `LESSONS`, in teaching order. `rooflinectl kernels` runs them.
Set TRITON_INTERPRET=1 before the first import to run them on the CPU through Triton's
interpreter (the kernels are decorated at import).
"""

from __future__ import annotations

import importlib

from rooflinectl_kernels.registry import LESSONS, Lesson, Variant

LESSON_MODULES = ("coalescing", "softmax", "matmul", "norms", "fusion", "attention", "quantized", "grouped_gemm",
                  "paged_attention")
for _module in LESSON_MODULES:
    importlib.import_module(f"rooflinectl_kernels.{_module}")

__all__ = ["LESSONS", "LESSON_MODULES", "Lesson", "Variant"]
