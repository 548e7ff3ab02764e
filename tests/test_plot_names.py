"""Short names for kernel groups: long C++ template names become something a person reads."""

from __future__ import annotations

import pandas as pd
import pytest
from test_plot_helpers import COPY, CUTLASS, GELU, SM90, SOFTMAX

from rooflinectl.outputs.plot_names import group_label, shorten_kernel_name


@pytest.mark.parametrize(
    ("name", "short"),
    [
        (GELU, "elementwise[gelu]"),
        (CUTLASS, "cutlass_80_wmma_tensorop_bf16_s…"),
        (SOFTMAX, "cunn_SoftMaxForward"),
        (COPY, "elementwise[direct_copy]"),
        (SM90, "sm90_xmma_gemm_bf16bf16_bf16f32…"),
        ("triton_poi_fused_add_mul_0", "triton_poi_fused_add_mul_0"),
        ("aten::mm", "mm"),
    ],
)
def test_shorten_kernel_name(name: str, short: str) -> None:
    assert shorten_kernel_name(name) == short
    assert len(shorten_kernel_name(name)) <= 32


def test_group_label_prefers_op_and_module() -> None:
    assert group_label(pd.Series({"op": "aten::mm", "module": "model.mlp.fc1", "kernel": CUTLASS})) == "mm · fc1"
    assert group_label(pd.Series({"op": "mylib::rope", "module": "model.attn.rope", "kernel": "k"})) == "rope · attn.rope"
    assert group_label(pd.Series({"op": "", "module": "", "kernel": GELU})) == "elementwise[gelu]"
