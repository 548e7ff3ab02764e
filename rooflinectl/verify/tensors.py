"""Where rebuilt ops run and the tensors they are given: one place for the rebuild modules
(rebuild.py, rebuild_conv.py, rebuild_ops.py, rebuild_launches.py). Tests set DEVICE to "cpu" or
"meta" to check a rebuild's shapes without a GPU; it is read at call time."""

from __future__ import annotations

import pandas as pd
import torch

from rooflinectl.analysis.advice.common import cell_text
from rooflinectl.verify.registry import NotRebuilt

DEVICE = "cuda"  # where rebuilt ops run (tests build them on the CPU to check their shapes)
DTYPES: dict[str, torch.dtype] = {
    "bf16": torch.bfloat16, "bfloat16": torch.bfloat16, "fp16": torch.float16, "float16": torch.float16,
    "fp32": torch.float32, "float32": torch.float32, "int8": torch.int8,
}


def dtype_of(row: pd.Series) -> torch.dtype:
    """The torch dtype of a kernel-table row (its dtype, else its precision); NotRebuilt if none."""
    name = (cell_text(row, "dtype") or cell_text(row, "precision")).replace("torch.", "")
    if name not in DTYPES:
        raise NotRebuilt(f"no rebuild for dtype {name or '?'}")
    return DTYPES[name]


def random_tensor(*shape: int, dtype: torch.dtype) -> torch.Tensor:
    """Random values of a shape and dtype on DEVICE (small integers for int8)."""
    if dtype == torch.int8:
        return torch.randint(-64, 64, shape, device=DEVICE, dtype=dtype)
    return torch.randn(*shape, device=DEVICE, dtype=torch.float32).to(dtype)
