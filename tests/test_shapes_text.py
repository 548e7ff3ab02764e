"""The shapes column written (attribution/calls.shapes_text) and read back (parse_shapes) by one
pair of functions, and the one element-size table every reader of the dtype column uses."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from cost_helpers import T

from rooflinectl.analysis.advice.common import element_bytes
from rooflinectl.analysis.links import message_bytes
from rooflinectl.attribution.calls import parse_shapes, shapes_text
from rooflinectl.costs import OpCall


def test_shapes_read_back_as_written() -> None:
    call = OpCall("aten::cat", ([T(2, 3), T(4), T(1, 1, 5)], T(64, 128), 1.0, T()))
    text = shapes_text(call)
    assert text == "([2, 3], [4], [1, 1, 5]) x [64, 128] x []"
    assert parse_shapes(text) == [(2, 3), (4,), (1, 1, 5), (64, 128), ()]


@pytest.mark.parametrize("text, shapes", [
    ("[250] -> [1000]", [(250,), (1000,)]),  # a collective's shapes (costs/collectives.py)
    ("[a, 3] x [2, 2]", [(2, 2)]),  # an unreadable piece is skipped
    ("", []), (None, []),
])
def test_parse_shapes_by_hand(text: str | None, shapes: list[tuple[int, ...]]) -> None:
    assert parse_shapes(text) == shapes


# Element sizes by hand, in both vocabularies of the dtype column and the precision names.
SIZES = {"fp64": 8, "float64": 8, "fp32": 4, "float32": 4, "tf32": 4, "bf16": 2, "bfloat16": 2, "fp16": 2,
         "float16": 2, "fp8": 1, "float8_e4m3fn": 1, "int64": 8, "int32": 4, "int16": 2, "int8": 1, "uint8": 1,
         "bool": 1, "complex64": 8, "int": 8}


@pytest.mark.parametrize("name", sorted(SIZES))
def test_one_element_size_table(name: str) -> None:
    assert element_bytes(pd.Series({"dtype": name, "precision": ""})) == SIZES[name]
    if name not in ("tf32", "int"):  # precisions, never a collective's dtype
        assert message_bytes("[8] -> [16]", name) == 16 * SIZES[name]


def test_unknown_dtype() -> None:
    assert element_bytes(pd.Series({"dtype": "mystery", "precision": ""})) == 4.0  # fp32 assumed
    assert math.isnan(message_bytes("[8]", "mystery"))
