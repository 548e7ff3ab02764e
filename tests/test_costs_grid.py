"""Property tests over grids of shapes, dtypes, strides, groups and masks: our FLOPs against
PyTorch's own counter (torch.utils.flop_counter.FlopCounterMode) where it covers the op, our
bytes against the real tensors (untyped_storage().nbytes() of every input the op reads and
every output it writes) for ops that stream their data once.

Each grid runs its cases in one profiled session (rooflinectl's own capture: the recorded op,
bound to its schema, is what the formula sees), FlopCounterMode separately per case. Ops that
only exist on CUDA (flash, efficient, cuDNN attention) run on meta tensors: their meta kernels
give the real output shapes and FlopCounterMode counts them. A failure lists the worst cases.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable
from dataclasses import dataclass

import pytest
import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from rooflinectl.attribution.calls import op_call
from rooflinectl.capture.run.session import profiling
from rooflinectl.costs import explain_cost

aten = torch.ops.aten


@dataclass
class Case:
    label: str
    run: Callable[[], object]  # returns the op's outputs
    op: str  # the recorded op whose cost we check ("aten::convolution")
    reads: Callable[[], list[torch.Tensor]] | None = None  # tensors the op reads (for bytes)
    flop_scale: float = 1.0  # our FLOPs = FlopCounterMode's x this (masked attention)
    flops: int | None = None  # an expected count where FlopCounterMode has none
    data_outputs: int | None = None  # the first n outputs are data (the rest: RNG state); None: all
    # what FlopCounterMode counts in place of `run`: grouped-query attention as the same op with k and
    # v repeated to every head (the same FLOPs; torch 2.11's counter asserts on GQA shapes)
    reference: Callable[[], object] | None = None


def _storages_nbytes(tensors: list[torch.Tensor]) -> int:
    """Bytes of the distinct storages (a tensor passed twice, or two views of one, count once)."""
    seen: dict[int, int] = {}
    for t in tensors:
        storage = t.untyped_storage()
        key = storage.data_ptr() if t.device.type != "meta" else id(t)
        seen[key] = storage.nbytes()
    return sum(seen.values())


def _outputs(value: object) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _outputs(v)]
    return []


def _check(cases: list[Case], *, check_bytes: bool) -> None:
    expected_flops = []
    for case in cases:
        if case.flops is not None:
            expected_flops.append(case.flops)
            continue
        with FlopCounterMode(display=False) as mode:
            (case.reference or case.run)()
        counts = mode.get_flop_counts()["Global"]
        packet = getattr(aten, case.op.split("::")[1])
        expected_flops.append(counts.get(packet, 0) * case.flop_scale)
    outputs = []
    with profiling("cpu") as capture:
        for i, case in enumerate(cases):
            with torch.profiler.record_function(f"grid:{i}"):
                outputs.append(case.run())
    ops = capture.trace.ops
    marks = {op.name: op for op in ops if op.name.startswith("grid:")}
    by_name: dict[str, list] = {}
    for op in sorted(ops, key=lambda o: o.ts_ns):
        by_name.setdefault(op.name, []).append(op)
    problems = []
    for i, case in enumerate(cases):
        mark = marks[f"grid:{i}"]
        named = by_name.get(case.op, [])
        first = bisect.bisect_left([o.ts_ns for o in named], mark.ts_ns)
        inside = [o for o in named[first:first + 1] if o.ts_ns <= mark.end_ns]
        if not inside:
            problems.append((float("inf"), f"{case.label}: {case.op} not recorded"))
            continue
        cost, why = explain_cost(op_call(inside[0]))
        if cost is None:
            problems.append((float("inf"), f"{case.label}: no cost ({why})"))
            continue
        if cost.flops != pytest.approx(expected_flops[i], rel=1e-9):
            off = abs(cost.flops - expected_flops[i]) / max(expected_flops[i], 1)
            problems.append((off, f"{case.label}: FLOPs {cost.flops:.6g}, expected {expected_flops[i]:.6g}"))
        if check_bytes and case.reads is not None:
            written = _outputs(outputs[i])[:case.data_outputs]
            expected = _storages_nbytes(case.reads()) + _storages_nbytes(written)
            # the minimum each formula claims (a sort's bytes count its in-place pass: min_bytes the minimum)
            if cost.minimum_bytes != expected:
                off = abs(cost.minimum_bytes - expected) / max(expected, 1)
                problems.append((off, f"{case.label}: min bytes {cost.minimum_bytes:.6g}, real tensors {expected}"))
    worst = sorted(problems, key=lambda p: -p[0])[:8]
    assert not problems, f"{len(problems)} of {len(cases)} cases off; worst:\n" + "\n".join(m for _, m in worst)


DTYPES = [torch.float32, torch.bfloat16]


def _t(*shape: int, dtype: torch.dtype = torch.float32, device: str = "cpu") -> torch.Tensor:
    return torch.randn(*shape, dtype=dtype, device=device) if device == "cpu" else torch.empty(*shape, dtype=dtype,
                                                                                                  device=device)


def test_gemm_grid():
    cases = []
    for (m, k, n), dtype, transposed in itertools.product([(1, 1, 1), (7, 13, 5), (33, 1, 129), (64, 48, 16)],
                                                          DTYPES, [False, True]):
        a = _t(m, k, dtype=dtype)
        b = _t(n, k, dtype=dtype).t() if transposed else _t(k, n, dtype=dtype)  # column-major B
        label = f"mm {m}x{k}x{n} {dtype} {'B^T' if transposed else ''}"
        cases.append(Case(label, lambda a=a, b=b: torch.mm(a, b), "aten::mm", lambda a=a, b=b: [a, b]))
        bias = _t(n, dtype=dtype)
        cases.append(Case("addmm " + label, lambda a=a, b=b, c=bias: torch.addmm(c, a, b), "aten::addmm",
                          lambda a=a, b=b, c=bias: [c, a, b]))
    for batch, (m, k, n) in itertools.product([1, 3], [(5, 7, 9), (16, 1, 4)]):
        a, b, c = _t(batch, m, k), _t(batch, k, n), _t(batch, m, n)
        cases.append(Case(f"bmm {batch}x{m}x{k}x{n}", lambda a=a, b=b: torch.bmm(a, b), "aten::bmm",
                          lambda a=a, b=b: [a, b]))
        cases.append(Case(f"baddbmm {batch}x{m}x{k}x{n}", lambda a=a, b=b, c=c: torch.baddbmm(c, a, b),
                          "aten::baddbmm", lambda a=a, b=b, c=c: [c, a, b]))
    _check(cases, check_bytes=True)


def _conv_cases(backward: bool) -> list[Case]:
    """1-, 2- and 3-d, plain, grouped and depthwise, transposed or not; stride, padding and
    dilation cycle through their values across the cases; odd spatial sizes."""
    cases = []
    for n, (dims, (groups, channels), transposed) in enumerate(
            itertools.product([1, 2, 3] if not backward else [1, 2], [(1, 4), (2, 4), (4, 4)], [False, True])):
        stride, padding, dilation = 1 + n % 2, (n // 2) % 2, 1 + (n // 4) % 2
        size = {1: (11,), 2: (9, 7), 3: (5, 6, 5)}[dims]
        x = _t(2, channels, *size)
        out_channels = 6 if groups != channels else channels
        kernel = (3,) * dims
        w = _t(channels, out_channels // groups, *kernel) if transposed else _t(out_channels, channels // groups, *kernel)
        bias = _t(out_channels)
        args = {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups}
        fn = {(1, False): F.conv1d, (2, False): F.conv2d, (3, False): F.conv3d,
              (1, True): F.conv_transpose1d, (2, True): F.conv_transpose2d, (3, True): F.conv_transpose3d}[dims, transposed]
        label = f"conv{dims}d{'T' if transposed else ''} g={groups} C={channels} s={stride} p={padding} d={dilation}"
        if not backward:
            cases.append(Case(label, lambda fn=fn, x=x, w=w, b=bias, a=args: fn(x, w, b, **a), "aten::convolution",
                              lambda x=x, w=w, b=bias: [x, w, b]))
            continue
        xg, wg = x.clone().requires_grad_(), w.clone().requires_grad_()
        with torch.no_grad():
            grad = torch.ones_like(fn(x, w, None, **args))

        def step(fn=fn, xg=xg, wg=wg, grad=grad, a=args):
            fn(xg, wg, None, **a).backward(grad)

        forward = FlopCounterMode(display=False)
        with forward:
            fn(x, w, None, **args)
        # grad_input and grad_weight: one forward each; flop_counter's backward agrees for
        # groups=1 only (it counts grad_weight `groups` times), so groups > 1 checks 2 x forward
        cases.append(Case("backward " + label, step, "aten::convolution_backward",
                          flops=None if groups == 1 else 2 * forward.get_total_flops()))
    return cases


def test_convolution_forward_grid():
    _check(_conv_cases(backward=False), check_bytes=True)


def test_convolution_backward_grid():
    _check(_conv_cases(backward=True), check_bytes=False)


def _pairs(sq: int, sk: int, align: str) -> int:
    offset = sk - sq if align == "bottom-right" else 0
    return sum(1 for i in range(sq) for j in range(sk) if j <= i + offset)


def test_attention_grid_on_meta_tensors():
    """flash (causal bottom-right), efficient and cuDNN (top-left), forward and backward, with
    Sq != Sk and grouped-query heads: non-causal FLOPs equal FlopCounterMode's; causal ones equal
    its count scaled by the visible share of the score matrix."""
    meta = {"device": "meta", "dtype": torch.bfloat16}
    cases = []
    for (sq, sk), hkv, causal in itertools.product([(1, 64), (100, 130), (128, 128), (130, 100)], [8, 2],
                                                   [False, True]):
        q, k, v = torch.empty(2, 8, sq, 64, **meta), torch.empty(2, hkv, sk, 64, **meta), torch.empty(2, hkv, sk, 64, **meta)
        ke, ve = k.repeat_interleave(8 // hkv, 1), v.repeat_interleave(8 // hkv, 1)  # efficient: no GQA
        label = f"Sq={sq} Sk={sk} Hkv={hkv} causal={causal}"
        flash = aten._scaled_dot_product_flash_attention(q, k, v, 0.0, causal)
        flash_mha = aten._scaled_dot_product_flash_attention(q, ke, ve, 0.0, causal)
        eff = aten._scaled_dot_product_efficient_attention(q, ke, ve, None, True, 0.0, causal)
        g = torch.empty(2, 8, sq, 64, **meta)
        scale_br = _pairs(sq, sk, "bottom-right") / (sq * sk) if causal else 1.0
        scale_tl = _pairs(sq, sk, "top-left") / (sq * sk) if causal else 1.0
        cases += [
            Case("flash " + label, lambda q=q, k=k, v=v, c=causal: aten._scaled_dot_product_flash_attention(q, k, v, 0.0, c),
                 "aten::_scaled_dot_product_flash_attention", lambda q=q, k=k, v=v: [q, k, v], scale_br,
                 data_outputs=2,
                 reference=lambda q=q, k=ke, v=ve, c=causal: aten._scaled_dot_product_flash_attention(q, k, v, 0.0, c)),
            Case("efficient " + label,
                 lambda q=q, k=ke, v=ve, c=causal: aten._scaled_dot_product_efficient_attention(q, k, v, None, True, 0.0, c),
                 "aten::_scaled_dot_product_efficient_attention", lambda q=q, k=ke, v=ve: [q, k, v], scale_tl,
                 data_outputs=2),
            Case("cudnn " + label,
                 lambda q=q, k=k, v=v, c=causal: aten._scaled_dot_product_cudnn_attention(q, k, v, None, True, 0.0, c),
                 "aten::_scaled_dot_product_cudnn_attention", lambda q=q, k=k, v=v: [q, k, v], scale_tl,
                 data_outputs=2,
                 reference=lambda q=q, k=ke, v=ve, c=causal: aten._scaled_dot_product_cudnn_attention(
                     q, k, v, None, True, 0.0, c)),
            Case("flash backward " + label,
                 lambda g=g, q=q, k=k, v=v, f=flash, c=causal: aten._scaled_dot_product_flash_attention_backward(
                     g, q, k, v, f[0], f[1], f[2], f[3], f[4], f[5], 0.0, c, f[6], f[7]),
                 "aten::_scaled_dot_product_flash_attention_backward",
                 lambda g=g, q=q, k=k, v=v, f=flash: [g, q, k, v, f[0], f[1]], scale_br,
                 reference=lambda g=g, q=q, k=ke, v=ve, f=flash_mha, c=causal:
                     aten._scaled_dot_product_flash_attention_backward(g, q, k, v, f[0], f[1], f[2], f[3], f[4], f[5],
                                                                       0.0, c, f[6], f[7])),
            Case("efficient backward " + label,
                 lambda g=g, q=q, k=ke, v=ve, e=eff, c=causal: aten._scaled_dot_product_efficient_attention_backward(
                     g, q, k, v, torch.empty(0, **meta), e[0], e[1], e[2], e[3], 0.0, [True, True, True, False], c),
                 "aten::_scaled_dot_product_efficient_attention_backward",
                 lambda g=g, q=q, k=ke, v=ve, e=eff: [g, q, k, v, e[0], e[1]], scale_tl),
        ]
    _check(cases, check_bytes=True)


def _ew(label: str, fn: Callable[..., torch.Tensor], *inputs: torch.Tensor, op: str, flops_per_element: int) -> Case:
    out = fn(*inputs)
    return Case(label, lambda: fn(*inputs), op, lambda: list(inputs), flops=flops_per_element * out.numel())


def test_elementwise_grid():
    """Broadcasting, type promotion, stride-0 expands, the same tensor twice, in-place, bool
    outputs; FLOPs by our convention (1 per arithmetic step, 0 for selections)."""
    cases = []
    for dtype_a, dtype_b in [(torch.float32, torch.float32), (torch.bfloat16, torch.float32), (torch.float16, torch.float16)]:
        for shape_a, shape_b in [((5, 7), (5, 7)), ((5, 7), (7,)), ((4, 1, 3), (1, 6, 1)), ((1,), (9, 3))]:
            a, b = _t(*shape_a, dtype=dtype_a), _t(*shape_b, dtype=dtype_b)
            label = f"{shape_a} {dtype_a} . {shape_b} {dtype_b}"
            cases.append(_ew("add " + label, torch.add, a, b, op="aten::add", flops_per_element=1))
            cases.append(_ew("maximum " + label, torch.maximum, a, b, op="aten::maximum", flops_per_element=0))
            cases.append(_ew("max(x, y) " + label, torch.max, a, b, op="aten::max", flops_per_element=0))
            cases.append(_ew("lt " + label, torch.lt, a, b, op="aten::lt", flops_per_element=0))
    x = _t(6, 10)
    cases.append(_ew("x * x", lambda t: t * t, x, op="aten::mul", flops_per_element=1))
    row = _t(10)
    cases.append(_ew("expanded row", lambda t, r: t * r.expand(6, 10), x, row, op="aten::mul", flops_per_element=1))
    cond = _t(6, 10) > 0
    cases.append(_ew("where", torch.where, cond, x, _t(10), op="aten::where", flops_per_element=0))
    cases.append(_ew("gelu", F.gelu, _t(3, 17, dtype=torch.bfloat16), op="aten::gelu", flops_per_element=5))
    y, z = _t(6, 10), _t(6, 10)
    cases.append(Case("add_ in place", lambda: y.add_(z), "aten::add_", lambda: [y, z], flops=60))
    _check(cases, check_bytes=True)


def test_data_movement_and_reduction_grid():
    """Ops that stream their input once and write their outputs once: bytes equal the real input
    and output storages (FLOPs: each formula's stated rate, checked here as well)."""
    x4 = _t(2, 6, 9, 9)
    x3 = _t(4, 5, 33, dtype=torch.bfloat16)
    x3f = _t(4, 5, 33)  # fp32: the CPU kernel writes the statistics in the input's dtype, CUDA in fp32
    ln_w, ln_b = _t(33), _t(33)
    parts = [_t(3, 5), _t(2, 5)]
    idx = torch.tensor([4, 0, 2])
    gx, gw = _t(40, 16, dtype=torch.bfloat16), _t(4, 16, 8, dtype=torch.bfloat16)
    offs = torch.tensor([7, 20, 20, 40], dtype=torch.int32)
    cases = [
        Case("sum dim", lambda: x3.sum(dim=(0, 2)), "aten::sum", lambda: [x3], flops=x3.numel()),
        Case("amax", lambda: x3.amax(dim=-1), "aten::amax", lambda: [x3], flops=0),
        Case("max dim", lambda: x3.max(dim=1), "aten::max", lambda: [x3], flops=0),
        Case("softmax", lambda: torch.softmax(x3, dim=-1), "aten::_softmax", lambda: [x3], flops=4 * x3.numel()),
        Case("layer norm", lambda: aten.native_layer_norm(x3f, [33], ln_w, ln_b, 1e-5), "aten::native_layer_norm",
             lambda: [x3f, ln_w, ln_b], flops=8 * x3f.numel()),
        Case("cat", lambda: torch.cat(parts), "aten::cat", lambda: parts, flops=0),
        Case("cast", lambda: x4.to(torch.bfloat16), "aten::copy_", lambda: [x4], flops=0),
        Case("max pool", lambda: F.max_pool2d_with_indices(x4, 3, 2, 1), "aten::max_pool2d_with_indices",
             lambda: [x4], flops=0),
        Case("avg pool", lambda: F.avg_pool2d(x4, 2), "aten::avg_pool2d", lambda: [x4], flops=2 * 6 * 4 * 4 * 4),
        Case("upsample nearest", lambda: F.interpolate(x4, scale_factor=2), "aten::upsample_nearest2d",
             lambda: [x4], flops=0),
        Case("upsample bilinear", lambda: F.interpolate(x4, size=(13, 5), mode="bilinear"),
             "aten::upsample_bilinear2d", lambda: [x4], flops=7 * 2 * 6 * 13 * 5),
        Case("topk", lambda: torch.topk(x3, 4, dim=1), "aten::topk", lambda: [x3], flops=0),
        Case("sort", lambda: torch.sort(x3, dim=-1), "aten::sort", lambda: [x3], flops=0),
        Case("index_select", lambda: torch.index_select(x4, 1, idx), "aten::index_select", None, flops=0),
        Case("grouped mm", lambda: torch._grouped_mm(gx, gw, offs=offs), "aten::_grouped_mm",
             lambda: [gx, gw, offs], flops=2 * 40 * 16 * 8),
    ]
    _check(cases, check_bytes=True)
