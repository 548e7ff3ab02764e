"""The chart's side panel names each group by its op and the END of its module path (issue 35):
GPT-2's blocks all start 'GPT2LMHeadModel.transformer.h.', so a path cut at its end made every
row read the same."""

from __future__ import annotations

from rooflinectl.outputs.plot_names import op_at_module


def test_the_module_is_cut_from_the_left() -> None:
    text = op_at_module("aten::addmm", "GPT2LMHeadModel.transformer.h.1.mlp.c_fc", 34)
    assert len(text) == 34 and text.startswith("aten::addmm · …") and text.endswith("h.1.mlp.c_fc")
    assert op_at_module("aten::mm", "Block.proj", 34) == "aten::mm · Block.proj"  # fits: whole
    assert op_at_module("aten::mm", "", 34) == "aten::mm"
    long_op = "aten::_scaled_dot_product_flash_attention_for_cpu"
    assert op_at_module(long_op, "attn", 34) == long_op[:33] + "…"  # no room for the module: the op first
    rows = {op_at_module("aten::addmm", f"GPT2LMHeadModel.transformer.h.{i}.mlp.{p}", 34)
            for i in range(2) for p in ("c_fc", "c_proj")}
    assert len(rows) == 4  # four groups, four different names
