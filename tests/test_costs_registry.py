"""The formula registry, the tensor helpers, and the RawOp -> OpCall parsing of recorded inputs."""

from __future__ import annotations

import pytest

from rooflinectl.attribution.calls import op_call, parse_concrete, shapes_text
from rooflinectl.capture.read.raw import RawOp
from rooflinectl.costs import (
    NO_WORK_OPS,
    OpCall,
    TensorArg,
    bound,
    cost_formula,
    cost_of,
    explain_cost,
    lookup,
    registered_ops,
    registry,
)
from rooflinectl.costs.registry import FAMILIES, op_of
from rooflinectl.costs.signature import _overloads
from rooflinectl.costs.tensors import broadcast_shape, unique_read_bytes
from rooflinectl.costs.torch_flops import DIFFERS, PROFILER_NAMES, TORCH_FLOP_FORMULAS

# --- registry ------------------------------------------------------------------------------------


def test_duplicate_registration_refused():
    before = registered_ops()
    with pytest.raises(ValueError, match="already registered"):
        cost_formula("aten::mm", family="gemm")(lambda call: None)
    assert registered_ops() == before
    assert lookup("aten::mm").formula is before["aten::mm"].formula


def test_unknown_family_refused():
    with pytest.raises(ValueError, match="unknown op family"):
        cost_formula("test::nothing", family="not-a-family")


def test_unknown_op_has_no_cost():
    assert lookup("aten::definitely_not_an_op") is None
    assert cost_of(OpCall("aten::definitely_not_an_op", (TensorArg((4,), "fp32", 4),))) is None


@pytest.mark.parametrize("call", [
    OpCall("aten::mm", (None, None)),  # tensors missing (AttributeError)
    OpCall("aten::mm", (TensorArg((4,), "fp32", 4), TensorArg((4,), "fp32", 4))),  # 1-d (ValueError)
    OpCall("aten::mm", ()),  # nothing recorded
    OpCall("aten::convolution", (TensorArg((1, 3, 8, 8), "fp32", 4), "weird")),  # not a tensor
    OpCall("aten::embedding_dense_backward", (TensorArg((4, 8), "fp32", 4), TensorArg((4,), "int64", 8), "x")),
])
def test_formula_on_unexpected_inputs_gives_none(call):
    assert cost_of(call) is None


def test_raising_formula_is_contained(monkeypatch):
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))  # keep the real one clean

    @cost_formula("test::divide", family="other")
    def divide(call):
        return 1 / 0

    assert lookup("test::divide").doc == ""
    assert cost_of(OpCall("test::divide", ())) is None  # ZeroDivisionError -> unknown, not raised


def test_registered_entries_are_well_formed():
    ops = registered_ops()
    assert len(ops) > 300
    for name, entry in ops.items():
        assert (name.startswith("aten::") or name in PROFILER_NAMES.values()) and entry.name == name
        assert entry.family in FAMILIES
        assert entry.doc, f"{name} has no docstring saying what it counts"
    assert not {op_of(k) for k in ops} & NO_WORK_OPS  # an op has a formula or does no work, never both


def test_every_key_names_an_op_or_overload_torch_has():
    """A typo in a registration ("aten::maximum_", an in-place op torch does not have) is an
    entry no call ever reaches."""
    missing = []
    for key in registered_ops():
        if not key.startswith("aten::"):
            continue
        op = op_of(key)
        overloads = [name for name, _ in _overloads(op)]
        overload = key[len(op) + 1:]
        if not overloads or (overload and overload not in overloads):
            missing.append(key)
    assert not missing, f"registered for ops this torch does not have: {missing}"


def test_every_op_flop_counter_knows_has_a_formula():
    """Iterating torch.utils.flop_counter's registry: each op it counts is one we cost (ours call
    its formula, or say in torch_flops.DIFFERS why not); its higher-order ops by the name the
    profiler records them under."""
    assert len(TORCH_FLOP_FORMULAS) >= 20
    for name in TORCH_FLOP_FORMULAS:
        recorded = PROFILER_NAMES.get(name, name)
        if recorded is None:
            continue  # never reaches the profiler under this name (PROFILER_NAMES says why)
        assert lookup(recorded) is not None, f"flop_counter counts {name}; we have no formula"
    for name in DIFFERS:
        assert name == "attention" or name in TORCH_FLOP_FORMULAS


def test_overload_entry_wins_over_the_op_entry():
    x = TensorArg((32, 64), "fp32", 4)
    other = cost_of(OpCall("aten::max", (x, x)))  # max(x, y): binds aten::max.other, element-wise
    reduction = cost_of(OpCall("aten::max", (x, 1, False)))  # max(x, dim): aten::max.dim
    assert (other.family, other.bytes) == ("elementwise", 3 * 32 * 64 * 4)  # two reads, one write
    assert (reduction.family, reduction.bytes) == ("reduction", 32 * 64 * 4 + 32 * (4 + 8))
    # the old formula costed max(x, y) as a reduction of x: a third of the bytes
    assert lookup("aten::max", "other").name == "aten::max.other"
    assert lookup("aten::max", "dim").name == "aten::max"


def test_binding_names_arguments_by_schema():
    x = TensorArg((2, 3, 8, 8), "fp32", 4)
    w = TensorArg((6, 1, 3, 3), "fp32", 4)
    # cudnn_convolution takes padding before stride, convolution stride before padding
    call = bound(OpCall("aten::cudnn_convolution", (x, w, [1, 1], [2, 2], [1, 1], 3, False, False, True),
                        types=("float", "float", "ScalarList", "ScalarList", "ScalarList", "Scalar",
                               "Scalar", "Scalar", "Scalar")))
    assert (call.overload, call.get("padding"), call.get("stride"), call.get("groups")) == ("default", [1, 1], [2, 2], 3)
    short = bound(OpCall("aten::sum", (x, [1], False)))  # dtype not recorded (an older torch)
    assert short.overload == "dim_IntList" and short.get("dtype") is None and short.get("keepdim") is False
    assert bound(OpCall("aten::mm", (x, "not a tensor"))).signature is None


def test_unbound_aten_call_says_so():
    cost, why = explain_cost(OpCall("aten::mm", (TensorArg((4, 4), "fp32", 4),)))  # one operand short
    assert cost is None and "no schema of aten::mm matches" in why
    cost, why = explain_cost(OpCall("aten::not_an_op", ()))
    assert cost is None and why.startswith("no cost formula")


# --- tensor helpers ------------------------------------------------------------------------------

def test_footprint_bytes():
    assert TensorArg((8, 16), "fp32", 4).footprint_bytes() == 8 * 16 * 4  # no strides: numel
    assert TensorArg((8, 16), "fp32", 4, (0, 1)).footprint_bytes() == 16 * 4  # rows broadcast
    assert TensorArg((8, 16), "fp32", 4, (0, 0)).footprint_bytes() == 4  # a scalar expanded
    assert TensorArg((8, 16), "fp32", 4, (32, 1)).footprint_bytes() == 8 * 16 * 4  # strided slice: numel
    assert TensorArg((0, 16), "fp32", 4, (16, 1)).footprint_bytes() == 0


def test_unique_read_bytes():
    a = TensorArg((8, 16), "fp32", 4, (16, 1), storage=5)
    row = TensorArg((8, 16), "fp32", 4, (0, 1), storage=5)  # a view of the same storage
    other = TensorArg((4,), "fp16", 2)
    assert unique_read_bytes([a, row]) == 8 * 16 * 4  # one storage: the largest footprint
    assert unique_read_bytes([a, other, other]) == 8 * 16 * 4 + 2 * 4 * 2  # no pointer: each counted


def test_broadcast_shape():
    assert broadcast_shape([(32, 1), (1, 64)]) == (32, 64)
    assert broadcast_shape([(5,), (2, 3, 5), ()]) == (2, 3, 5)
    assert broadcast_shape([]) == ()


# --- RawOp -> OpCall -----------------------------------------------------------------------------

def test_parse_concrete():
    assert parse_concrete("") is None
    assert parse_concrete("1") == 1
    assert parse_concrete("0.") == 0.0
    assert parse_concrete("[0, 1]") == [0, 1]
    assert parse_concrete("False") is False
    assert parse_concrete("__import__('os')") == "__import__('os')"  # never evaluated
    assert parse_concrete(3) == 3


def test_op_call_tensors_lists_and_scalars():
    op = RawOp(
        external_id=1, name="aten::cat", category="cpu_op", tid=1, ts_ns=0, dur_ns=10,
        input_dims=[[[4, 6], [2, 6]], []],
        input_types=["TensorList", "Scalar"],
        input_strides=[[[6, 1], [6, 1]], []],
        concrete_inputs=["", "0"],
        input_storages=[[111, 222], None],
        list_dtypes=[["float32", "float64"], None],
    )
    call = op_call(op)
    parts, dim = call.args
    assert dim == 0
    assert [(t.shape, t.dtype, t.itemsize, t.strides, t.storage) for t in parts] == [
        ((4, 6), "fp32", 4, (6, 1), 111), ((2, 6), "fp64", 8, (6, 1), 222)]
    assert shapes_text(call) == "([4, 6], [2, 6])"


def test_op_call_plain_tensors_and_optional_args():
    op = RawOp(
        external_id=2, name="aten::addmm", category="cpu_op", tid=1, ts_ns=0, dur_ns=10,
        input_dims=[[12], [8, 16], [16, 12], [], []],
        input_types=["float", "c10::BFloat16", "c10::BFloat16", "Scalar", ""],
        input_strides=[[1], [16, 1], [1, 16], [], []],
        concrete_inputs=["", "", "", "1", ""],
        input_storages=[10, 20, 0, None, None],
    )
    call = op_call(op)
    bias, a, b, beta, missing = call.args
    assert (bias.dtype, bias.itemsize, bias.storage) == ("fp32", 4, 10)
    assert (a.dtype, a.itemsize, a.strides) == ("bf16", 2, (16, 1))
    assert b.storage is None  # a 0 pointer is no pointer
    assert beta == 1 and missing is None
    assert shapes_text(call) == "[12] x [8, 16] x [16, 12]"


def test_every_module_that_registers_formulas_is_loaded_by_the_registry():
    """The registry imports FORMULA_MODULES at its first lookup: a module of costs/ that
    registers formulas but is not listed there would leave its ops silently without a cost."""
    from pathlib import Path

    from rooflinectl.costs import registry

    folder = Path(registry.__file__).parent
    registering = {p.stem for p in folder.glob("*.py") if p.stem != "registry" and "cost_formula(" in p.read_text()}
    assert registering == set(registry.FORMULA_MODULES)
