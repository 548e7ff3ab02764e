"""Formulas against reality: small ops run on CPU under the profiler, each recorded op turned into
an OpCall (rooflinectl.attribution.calls.op_call) and costed, then compared with FLOPs and bytes
computed from the actual torch tensors. This checks that the recorded argument positions (dim
lists, dtype codes, flags, tensor lists with their dtypes, storage pointers) are the ones each
formula reads.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from rooflinectl.attribution.calls import op_call
from rooflinectl.capture.run.session import profiling
from rooflinectl.costs import OpCost, cost_of


def nb(*tensors: torch.Tensor) -> int:
    """Bytes of the tensors' elements."""
    return sum(t.numel() * t.element_size() for t in tensors)


@pytest.fixture(scope="module")
def run():
    """One profiled run of every op below; returns (recorded ops, inputs, results)."""
    torch.manual_seed(0)
    i = {
        "a": torch.randn(8, 16), "b": torch.randn(16, 12),
        "x": torch.randn(5, 7), "row": torch.randn(7),
        "c1": torch.randn(3, 9), "c2": torch.randn(4, 9),
        "s1": torch.randn(6, 10, 4), "s2": torch.randn(6, 10, 5),
        "ln": torch.randn(3, 5, 8), "ln_w": torch.randn(8), "ln_b": torch.randn(8),
        "emb": torch.randn(20, 7), "idx": torch.tensor([[1, 2, 3], [4, 5, 19]]),
        "cast": torch.randn(4, 11),
        "sm": torch.randn(6, 13), "sm_h": torch.randn(6, 14).half(),
        "img": torch.randn(2, 3, 8, 8), "w": torch.randn(5, 3, 3, 3), "bias": torch.randn(5),
        "img_g": torch.randn(1, 8, 10, 10), "w_g": torch.randn(16, 2, 3, 3),
        "img_t": torch.randn(1, 4, 5, 5), "w_t": torch.randn(4, 6, 3, 3),
        "q": torch.randn(2, 3, 10, 8), "k": torch.randn(2, 3, 12, 8), "v": torch.randn(2, 3, 12, 8),
        "vn": torch.randn(2, 3, 4), "am": torch.randn(5, 9), "vm": torch.randn(5, 10),
        "mx": torch.randn(5, 11), "wx": torch.randn(4, 12),
        "lin_x": torch.randn(8, 17), "bx": torch.randn(3, 7), "bt": torch.rand(3, 7),
        "px": torch.randn(2, 3, 4), "isx": torch.randn(10, 6), "isi": torch.tensor([0, 3, 3, 9]),
        "ba": torch.randn(2, 3, 4), "bb": torch.randn(2, 4, 5),
        "cb_x": torch.randn(1, 3, 6, 6, requires_grad=True), "cb_w": torch.randn(4, 3, 3, 3, requires_grad=True),
        "fl": [torch.randn(3, 4), torch.randn(5)], "fl2": [torch.randn(3, 4), torch.randn(5)],
        "ix": torch.randn(9, 5), "ii": torch.tensor([0, 2, 8]),
    }
    i["mask"] = i["wx"] > 0
    linear = torch.nn.Linear(17, 12)
    i["lin_w"], i["lin_b"] = linear.weight, linear.bias
    r = {}
    with profiling("cpu") as cap, torch.no_grad():
        r["mm"] = torch.mm(i["a"], i["b"])
        r["xx"] = i["x"] + i["x"]
        r["xrow"] = i["x"] * i["row"]
        r["cat"] = torch.cat([i["c1"], i["c2"]], dim=0)
        r["cat_mixed"] = torch.cat([i["c1"], i["c1"].double()], dim=1)
        r["sum1"] = torch.sum(i["s1"], dim=1)
        r["sum2"] = torch.sum(i["s2"], dim=[0, 2], keepdim=True)
        r["ln"] = F.layer_norm(i["ln"], (8,), i["ln_w"], i["ln_b"])
        r["emb"] = F.embedding(i["idx"], i["emb"])
        r["cast"] = i["cast"].to(torch.bfloat16)
        r["sm"] = F.softmax(i["sm"], dim=1)
        r["sm_h"] = F.softmax(i["sm_h"], dim=1, dtype=torch.float32)
        r["conv"] = F.conv2d(i["img"], i["w"], i["bias"], stride=2, padding=1)
        r["conv_g"] = F.conv2d(i["img_g"], i["w_g"], groups=4, dilation=2)
        r["conv_t"] = F.conv_transpose2d(i["img_t"], i["w_t"], stride=2, padding=1, output_padding=1)
        r["sdpa"] = F.scaled_dot_product_attention(i["q"], i["k"], i["v"], is_causal=True)
        r["vn"] = torch.linalg.vector_norm(i["vn"], dim=1)
        r["am"] = torch.argmax(i["am"], dim=1)
        r["vm"] = torch.var_mean(i["vm"], dim=1)
        r["mx"] = torch.max(i["mx"], dim=1)
        r["where"] = torch.where(i["mask"], i["wx"], 0.0)
        r["lin"] = linear(i["lin_x"])
        r["bce"] = F.binary_cross_entropy_with_logits(i["bx"], i["bt"], reduction="none")
        r["pad"] = F.pad(i["px"], (1, 2, 3, 4))
        r["is"] = torch.index_select(i["isx"], 0, i["isi"])
        r["bmm"] = torch.bmm(i["ba"], i["bb"])
        torch._foreach_add_(i["fl"], i["fl2"])
        r["index"] = i["ix"][i["ii"]]
    go = torch.randn(1, 4, 4, 4)
    with profiling("cpu") as cap_bwd:
        F.conv2d(i["cb_x"], i["cb_w"]).backward(go)
    r["go"] = go
    return cap.trace.ops + cap_bwd.trace.ops, i, r


def costs(ops, name: str, *shapes: tuple[int, ...]) -> list[OpCost | None]:
    """Costs of the recorded `name` ops whose tensor inputs have exactly these shapes."""
    found = []
    for op in ops:
        if op.category != "cpu_op" or op.name != name:
            continue
        call = op_call(op)
        if [t.shape for t in call.tensors()] == [tuple(s) for s in shapes]:
            found.append(cost_of(call))
    assert found, f"no {name} with inputs {shapes} was recorded"
    return found


def check(ops, name: str, shapes, flops: float, nbytes: float) -> OpCost:
    found = costs(ops, name, *shapes)
    for c in found:
        assert c is not None, f"{name}: no cost for the recorded call"
        assert (c.flops, c.bytes) == (flops, nbytes), name
    return found[0]


def test_mm(run):
    ops, i, r = run
    a, b, out = i["a"], i["b"], r["mm"]
    m, k = a.shape
    n = b.shape[1]
    check(ops, "aten::mm", [a.shape, b.shape], 2 * m * n * k, nb(a, b, out))


def test_add_same_tensor_reads_it_once(run):
    ops, i, r = run
    x = i["x"]
    c = check(ops, "aten::add", [x.shape, x.shape], x.numel(), nb(x) + nb(r["xx"]))  # x counted once
    assert c.family == "elementwise"


def test_mul_broadcast(run):
    ops, i, r = run
    check(ops, "aten::mul", [i["x"].shape, i["row"].shape], r["xrow"].numel(), nb(i["x"], i["row"], r["xrow"]))


def test_cat(run):
    ops, i, r = run
    check(ops, "aten::cat", [i["c1"].shape, i["c2"].shape], 0, nb(i["c1"], i["c2"], r["cat"]))


def test_cat_mixed_dtypes_from_list_dtypes(run):
    ops, i, r = run
    c1 = i["c1"]
    assert r["cat_mixed"].dtype == torch.float64
    c = check(ops, "aten::cat", [c1.shape, c1.shape], 0, nb(c1, c1.double(), r["cat_mixed"]))
    assert c.dtype == "fp64"


def test_sum_dim_list(run):
    ops, i, r = run
    for x, out in ((i["s1"], r["sum1"]), (i["s2"], r["sum2"])):
        check(ops, "aten::sum", [x.shape], x.numel(), nb(x, out))


def test_layer_norm(run):
    ops, i, r = run
    x, w, b, y = i["ln"], i["ln_w"], i["ln_b"], r["ln"]
    rows = x.numel() // x.shape[-1]
    expected_bytes = nb(x, w, b, y) + 2 * rows * 4  # + fp32 mean and rstd per row
    for name in ("aten::layer_norm", "aten::native_layer_norm"):
        check(ops, name, [x.shape, w.shape, b.shape], 8 * x.numel(), expected_bytes)


def test_embedding(run):
    ops, i, r = run
    idx, out = i["idx"], r["emb"]
    check(ops, "aten::embedding", [i["emb"].shape, idx.shape], 0, nb(idx) + 2 * nb(out))


def test_cast_copy(run):
    ops, i, r = run
    src, dst = i["cast"], r["cast"]
    c = check(ops, "aten::copy_", [dst.shape, src.shape], 0, nb(src, dst))
    assert c.dtype == "fp32->bf16"  # source and destination dtypes, from the recorded input types


def test_softmax(run):
    ops, i, r = run
    x, y = i["sm"], r["sm"]
    for name in ("aten::softmax", "aten::_softmax"):
        check(ops, name, [x.shape], 4 * x.numel(), nb(x, y))


def test_softmax_dtype_argument(run):
    ops, i, r = run
    x, y = i["sm_h"], r["sm_h"]
    assert y.dtype == torch.float32
    check(ops, "aten::softmax", [x.shape], 4 * x.numel(), nb(x, y))  # fp16 in, fp32 out


def _conv_flops(x: torch.Tensor, w: torch.Tensor, out: torch.Tensor, transposed: bool = False) -> int:
    if transposed:  # every input element meets every (Cout/groups) x kernel weight
        return 2 * x.numel() * w.shape[1] * w[0, 0].numel()
    return 2 * out.numel() * w[0].numel()  # every output element: Cin/groups * kh * kw FMAs


@pytest.mark.parametrize(("key", "xk", "wk", "bk"), [
    ("conv", "img", "w", "bias"), ("conv_g", "img_g", "w_g", None), ("conv_t", "img_t", "w_t", None)])
def test_convolution(run, key, xk, wk, bk):
    ops, i, r = run
    x, w, out = i[xk], i[wk], r[key]
    shapes = [x.shape, w.shape] + ([i[bk].shape] if bk else [])
    expected_bytes = nb(x, w, out) + (nb(i[bk]) if bk else 0)
    flops = _conv_flops(x, w, out, transposed=key == "conv_t")
    for name in ("aten::convolution", "aten::_convolution"):
        check(ops, name, shapes, flops, expected_bytes)
    if key != "conv_t":  # the innermost CPU op, padding before stride
        check(ops, "aten::mkldnn_convolution", shapes, flops, expected_bytes)


def test_convolution_backward(run):
    ops, i, r = run
    x, w, go = i["cb_x"], i["cb_w"], r["go"]
    fwd = 2 * go.numel() * w[0].numel()
    # grad_input and grad_weight: one forward's FLOPs each; grad_out, x, w read; dx, dw written
    check(ops, "aten::convolution_backward", [go.shape, x.shape, w.shape], 2 * fwd,
          nb(go, x, w) + nb(x.grad, w.grad))


def test_sdpa_cpu_flash(run):
    ops, i, r = run
    q, k, v, out = i["q"], i["k"], i["v"], r["sdpa"]
    name = "aten::_scaled_dot_product_flash_attention_for_cpu"
    if not any(op.name == name for op in ops):
        pytest.skip(f"{name} not used by this torch build")
    b, h, sq, d = q.shape
    sk = k.shape[2]
    # The kernel's causal mask is top-left aligned (query i sees keys j <= i), even with Sq < Sk:
    top_left = torch.ones(sq, sk, dtype=torch.bool).tril()
    assert torch.allclose(out, F.scaled_dot_product_attention(q, k, v, attn_mask=top_left), atol=1e-6)
    visible = int(top_left.sum())  # 55 of 120 pairs: not half of them
    flops = 2 * b * h * visible * (d + d)  # Q@K^T and P@V over the visible pairs
    check(ops, name, [q.shape, k.shape, v.shape], flops, nb(q, k, v, out) + b * h * sq * 4)  # + fp32 lse


def test_vector_norm_dim(run):
    ops, i, r = run
    x = i["vn"]
    check(ops, "aten::linalg_vector_norm", [x.shape], 2 * x.numel(), nb(x, r["vn"]))


def test_argmax(run):
    ops, i, r = run
    x, out = i["am"], r["am"]
    assert out.dtype == torch.int64
    check(ops, "aten::argmax", [x.shape], 0, nb(x, out))


def test_var_mean(run):
    ops, i, r = run
    x, (var, mean) = i["vm"], r["vm"]
    check(ops, "aten::var_mean", [x.shape], 4 * x.numel(), nb(x, var, mean))


def test_max_dim(run):
    ops, i, r = run
    x, (values, indices) = i["mx"], r["mx"]
    check(ops, "aten::max", [x.shape], 0, nb(x, values, indices))


def test_where_scalar_other(run):
    ops, i, r = run
    mask, x, out = i["mask"], i["wx"], r["where"]
    check(ops, "aten::where", [mask.shape, x.shape], 0, nb(mask, x, out))


def test_linear_addmm(run):
    ops, i, r = run
    x, w, b, out = i["lin_x"], i["lin_w"], i["lin_b"], r["lin"]
    m, k = x.shape
    n = w.shape[0]
    # addmm(bias, x, w.t()): w.t() is a view of w's storage
    check(ops, "aten::addmm", [b.shape, x.shape, (k, n)], 2 * m * n * k, nb(b, x, w, out))


def test_bce_reduction_none(run):
    ops, i, r = run
    x, t, out = i["bx"], i["bt"], r["bce"]
    check(ops, "aten::binary_cross_entropy_with_logits", [x.shape, t.shape], 6 * x.numel(), nb(x, t, out))


def test_pad(run):
    ops, i, r = run
    check(ops, "aten::constant_pad_nd", [i["px"].shape], 0, nb(i["px"], r["pad"]))


def test_index_select(run):
    ops, i, r = run
    idx, out = i["isi"], r["is"]
    check(ops, "aten::index_select", [i["isx"].shape, idx.shape], 0, nb(idx) + 2 * nb(out))


def test_bmm(run):
    ops, i, r = run
    a, b, out = i["ba"], i["bb"], r["bmm"]
    bsz, m, k = a.shape
    n = b.shape[2]
    check(ops, "aten::bmm", [a.shape, b.shape], 2 * bsz * m * n * k, nb(a, b, out))


def test_foreach_tensor_lists(run):
    ops, i, r = run
    lst, other = i["fl"], i["fl2"]
    elems = sum(t.numel() for t in lst)
    shapes = [t.shape for t in lst] + [t.shape for t in other]
    check(ops, "aten::_foreach_add_", shapes, elems, nb(*lst, *other) + nb(*lst))  # both read, first written


def test_index_records_no_indices_so_cost_unknown(run):
    """torch 2.13 records `Tensor?[] indices` as an empty, untyped input: aten::index cannot be
    costed from a trace (it shows as unknown work). If a later torch records the list, the cost
    must match the tensors."""
    ops, i, r = run
    x, idx, out = i["ix"], i["ii"], r["index"]
    recorded = [op for op in ops if op.name == "aten::index" and op.input_dims and op.input_dims[0] == list(x.shape)]
    assert recorded
    for op in recorded:
        call = op_call(op)
        if len(call.tensors()) == 1:
            assert cost_of(call) is None
        else:
            c = cost_of(call)
            assert c is not None and c.bytes == nb(idx) + 2 * nb(out)
