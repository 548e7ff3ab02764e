"""The reference kernels on the CPU, through Triton's interpreter: every kernel against its fp32
torch reference on small and odd shapes, every autotune config, and each declared cost against a
formula written here from the shapes (not read from the kernels)."""

from __future__ import annotations

import contextlib
import sys
import types

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.triton

CPU = torch.device("cpu")

# Odd shapes beyond each reference kernel's own small size: tails, single rows, more than one block.
ODD_SHAPES = {
    "copy": [{"n": 3 * 1024}],
    "vector_add": [{"n": 1}, {"n": 4097}],
    "softmax": [{"rows": 1, "cols": 1}, {"rows": 3, "cols": 2049}],
    "softmax_long": [{"rows": 2, "cols": 513, "block": 128}],
    "matmul": [{"M": 9, "N": 33, "K": 65}],
    "matmul_fp16": [{"M": 1, "N": 16, "K": 16}],
    "layernorm_fwd": [{"rows": 1, "cols": 7}, {"rows": 19, "cols": 129}],
    "rmsnorm_fwd": [{"rows": 1, "cols": 7}],
    "layernorm_bwd": [{"rows": 19, "cols": 129}],
    "rmsnorm_bwd": [{"rows": 1, "cols": 7}, {"rows": 19, "cols": 129}],
    "bias_gelu_residual": [{"rows": 3, "cols": 1}],
    "attention": [{"batch": 2, "heads": 1, "n": 130, "head_dim": 32}],
    "attention_causal": [{"batch": 1, "heads": 2, "n": 130, "head_dim": 16}, {"batch": 1, "heads": 1, "n": 1, "head_dim": 16}],
    "int8_gemv": [{"M": 1, "N": 17, "K": 1030}],
    "int8_gemm": [{"M": 3, "N": 129, "K": 70}],
    "grouped_gemm": [{"tokens": 300, "experts": 3, "K": 64, "N": 130}],
    "paged_decode": [{"seqs": 2, "heads": 1, "head_dim": 32, "max_len": 200}],
}


def _cases(suite) -> list[tuple[str, dict[str, int]]]:
    return [(name, dict(spec.shapes["small"])) for name, spec in suite.KERNELS.items()] + [
        (name, shape) for name, shapes in ODD_SHAPES.items() for shape in shapes]


def _run(suite, name: str, shape: dict[str, int], kinds: tuple[str, ...] = ("triton", "torch"),
         only: str | None = None):
    """{variant: result} of one reference kernel on one shape (untimed), and the inputs it ran on."""
    from rooflinectl_kernels.harness import run_variant

    spec = suite.KERNELS[name]
    torch.manual_seed(0)
    inputs = spec.make_inputs(shape, CPU, spec.dtype_for_run())
    inputs["shape"] = shape
    ref = spec.reference(inputs)
    results = {v.name: run_variant(spec, v, inputs, ref, CPU, None, timed=False)
               for v in spec.variants if v.kind in kinds and only in (None, v.name)}
    return results, inputs


@pytest.fixture(scope="module")
def triton_runs(interpreted_kernels):
    """Every Triton variant of every reference kernel on every small and odd shape, run once."""
    return [(name, shape, *_run(interpreted_kernels, name, shape, ("triton",)))
            for name, shape in _cases(interpreted_kernels)]


def test_every_kernel_has_odd_shapes(interpreted_kernels) -> None:
    assert set(ODD_SHAPES) == set(interpreted_kernels.KERNELS)


@pytest.mark.slow
def test_every_kernel_matches_its_reference(triton_runs) -> None:
    failures = []
    for name, shape, results, _ in triton_runs:
        for variant, result in results.items():
            if result.error or not result.check.ok:
                worst = result.error or "; ".join(result.check.worst)
                failures.append(f"{name} / {variant} {shape}: {worst}")
    assert not failures, "\n".join(failures)


# --- declared costs against formulas written from the shapes ------------------------------------

def _bands(rows: int) -> int:
    """Backward programs: about four bands per SM (four SMs are assumed on the CPU)."""
    per_program = -(-rows // min(rows, 16))
    return -(-rows // per_program)


def _expected(name: str, s: dict[str, int], inputs: dict) -> dict[str, tuple[float, float]]:
    """{variant: (FLOPs, bytes)} per call. Half types are 2 bytes, statistics and scales fp32."""
    if name == "copy":
        return {"coalesced": (0, 8 * s["n"]), "strided": (0, 8 * s["n"])}
    if name == "vector_add":
        return {"triton": (s["n"], 12 * s["n"])}
    if name in ("softmax", "softmax_long"):
        r, c = s["rows"], s["cols"]
        if name == "softmax":
            passes = (4 * r * c, (2 * r * c + 4 * r) + (2 * r * c + 4 * r + 2 * r * c + 4 * r) + (2 * r * c + 4 * r + 2 * r * c))
            return {"fused": (4 * r * c, 4 * r * c), "separate passes": passes}
        return {"online": (4 * r * c, 4 * r * c), "three passes": (4 * r * c, 4 * r * c)}
    if name in ("matmul", "matmul_fp16"):
        m, n, k = s["M"], s["N"], s["K"]
        gemm = (2 * m * n * k, 2 * (m * k + k * n + m * n))
        return {"tiled": gemm, "naive": gemm} if name == "matmul" else {"tiled": gemm}
    if name in ("layernorm_fwd", "rmsnorm_fwd", "layernorm_bwd", "rmsnorm_bwd"):
        r, c = s["rows"], s["cols"]
        p = _bands(r)
        return {
            "layernorm_fwd": {"fused": (8 * r * c, 4 * r * c + 4 * c + 8 * r)},
            "rmsnorm_fwd": {"fused": (4 * r * c, 4 * r * c + 2 * c + 4 * r)},
            "layernorm_bwd": {"fused": (13 * r * c + 2 * p * c,
                                        6 * r * c + 2 * c + 8 * r + 8 * p * c + 2 * (4 * p * c + 2 * c))},
            "rmsnorm_bwd": {"fused": (9 * r * c + p * c, 6 * r * c + 2 * c + 4 * r + 4 * p * c + (4 * p * c + 2 * c))},
        }[name]
    if name == "bias_gelu_residual":
        r, c = s["rows"], s["cols"]
        return {"fused": (7 * r * c, 6 * r * c + 2 * c)}
    if name in ("attention", "attention_causal"):
        b, h, n, d = s["batch"], s["heads"], s["n"], s["head_dim"]
        flops = 4 * b * h * n * n * d // (2 if name == "attention_causal" else 1)
        return {"flash": (flops, 8 * b * h * n * d)}
    if name in ("int8_gemv", "int8_gemm"):
        m, n, k = s["M"], s["N"], s["K"]
        weight_bytes = n * 4 * -(-k // 4) if m == 1 else n * k  # the GEMV reads whole packed words
        return {f"int8 {name[5:]}": (2 * m * n * k + m * n, 2 * m * k + weight_bytes + 4 * n + 2 * m * n)}
    if name == "grouped_gemm":
        t, e, k, n = s["tokens"], s["experts"], s["K"], s["N"]
        return {"grouped": (2 * t * k * n, 2 * t * k + 2 * e * k * n + 2 * t * n + 8 * e)}
    if name == "paged_decode":
        live, h, d, seqs = sum(inputs["lengths"]), s["heads"], s["head_dim"], s["seqs"]
        pages = -(-s["max_len"] // 16)
        return {"paged": (4 * live * h * d, 4 * live * h * d + 4 * seqs * h * d + 4 * seqs * pages + 4 * seqs)}
    raise AssertionError(f"no formula for reference kernel {name}")


def test_declared_costs_match_the_formulas(interpreted_kernels, triton_runs) -> None:
    mismatches = []
    for name, shape, results, inputs in triton_runs:
        expected = _expected(name, shape, inputs)
        assert set(results) == set(expected), name
        for variant, result in results.items():
            got = (result.flops, result.bytes)
            if result.error or got != pytest.approx(expected[variant]):
                mismatches.append(f"{name} / {variant} {shape}: declared {got}, formula {expected[variant]}"
                                  f" {result.error or ''}")
    assert not mismatches, "\n".join(mismatches)


def test_tensor_core_kernels_say_so(interpreted_kernels) -> None:
    results, _ = _run(interpreted_kernels, "matmul", {"M": 16, "N": 16, "K": 16})
    # the bf16 reference kernel runs in fp16 under the interpreter (it cannot multiply bf16), and says so
    assert (results["tiled"].unit, results["tiled"].precision, results["tiled"].family) == ("tensor", "fp16", "gemm")
    assert (results["naive"].unit, results["naive"].precision, results["naive"].family) == ("simt", "fp32", "gemm")


def test_declared_names_are_the_kernel_names(triton_runs) -> None:
    """`rooflinectl profile` matches a declared cost to the traced kernel by name."""
    from rooflinectl_kernels.declared import jit_function

    names = set()
    for module in [m for n, m in sys.modules.items() if n.startswith("rooflinectl_kernels.")]:
        for value in vars(module).values():
            base = jit_function(value)
            if hasattr(base, "fn") and isinstance(base.fn, types.FunctionType):
                names.add(base.fn.__name__)
    declared = {k for _, _, results, _ in triton_runs for r in results.values() for k in r.kernels}
    assert declared and declared <= names, declared - names


# --- every autotune config, one at a time -------------------------------------------------------

@contextlib.contextmanager
def only_config(kernel, config):
    saved = kernel.configs
    kernel.configs = [config]
    try:
        yield
    finally:
        kernel.configs = saved


AUTOTUNED = [  # (reference kernel, shape that spans several blocks of every config, module, kernel, configs)
    ("copy", {"n": 40 * 1024}, "coalescing", "copy_coalesced_kernel", "COPY_CONFIGS"),
    ("matmul", {"M": 130, "N": 260, "K": 70}, "matmul", "matmul_tiled_kernel", "MATMUL_CONFIGS"),
    ("attention", {"batch": 1, "heads": 1, "n": 200, "head_dim": 16}, "attention", "flash_attention_fwd_kernel",
     "ATTENTION_CONFIGS"),
    ("attention_causal", {"batch": 1, "heads": 1, "n": 200, "head_dim": 16}, "attention",
     "flash_attention_fwd_kernel", "ATTENTION_CONFIGS"),
    ("int8_gemv", {"M": 1, "N": 40, "K": 1100}, "quantized", "int8_gemv_kernel", "GEMV_CONFIGS"),
    ("int8_gemm", {"M": 70, "N": 140, "K": 140}, "quantized", "int8_gemm_kernel", "GEMM_CONFIGS"),
    ("grouped_gemm", {"tokens": 200, "experts": 3, "K": 64, "N": 140}, "grouped_gemm", "grouped_gemm_kernel",
     "GROUPED_CONFIGS"),
    ("paged_decode", {"seqs": 2, "heads": 1, "head_dim": 16, "max_len": 300}, "paged_attention",
     "paged_decode_kernel", "DECODE_CONFIGS"),
]


@pytest.mark.parametrize(("name", "shape", "module", "kernel", "configs"), AUTOTUNED,
                         ids=[a[0] for a in AUTOTUNED])
@pytest.mark.slow
def test_every_autotune_config_matches(interpreted_kernels, name, shape, module, kernel, configs) -> None:
    source = sys.modules[f"rooflinectl_kernels.{module}"]
    tuned_kernel = getattr(source, kernel)
    primary = interpreted_kernels.KERNELS[name].primary.name
    failures = []
    for config in getattr(source, configs):
        with only_config(tuned_kernel, config):
            result = _run(interpreted_kernels, name, shape, only=primary)[0][primary]
        if result.error or not result.check.ok:
            failures.append(f"{config}: {result.error or result.check.worst}")
    assert not failures, "\n".join(failures)


# --- declared FLOPs against PyTorch's own counter (torch.utils.flop_counter) --------------------

COUNTED = [  # reference kernel, shape, the torch variant flop_counter sees, FLOPs the reference kernel does beyond it
    ("matmul", {"M": 20, "N": 30, "K": 40}, "torch matmul", 0),
    ("attention", {"batch": 1, "heads": 2, "n": 40, "head_dim": 16}, "naive", 0),
    ("int8_gemm", {"M": 4, "N": 24, "K": 32}, "bf16 F.linear", 4 * 24),  # + M*N fp32 scale multiplies
    ("grouped_gemm", {"tokens": 40, "experts": 3, "K": 16, "N": 24}, "torch loop", 0),
]


@pytest.mark.parametrize(("name", "shape", "variant", "extra"), COUNTED, ids=[c[0] for c in COUNTED])
def test_declared_flops_match_flop_counter(interpreted_kernels, name, shape, variant, extra) -> None:
    from torch.utils.flop_counter import FlopCounterMode

    spec = interpreted_kernels.KERNELS[name]
    inputs = spec.make_inputs(shape, CPU, spec.dtype_for_run())
    inputs["shape"] = shape
    with FlopCounterMode(display=False) as counter:
        next(v for v in spec.variants if v.name == variant).run(inputs)
    declared = _run(interpreted_kernels, name, shape, only=spec.primary.name)[0][spec.primary.name].flops
    assert counter.get_total_flops() > 0
    assert declared == counter.get_total_flops() + extra


def test_causal_attention_declares_half_of_flop_counter(interpreted_kernels) -> None:
    """flop_counter counts the full square; the causal kernel skips the masked half (README).
    On the CPU the counter sees SDPA's math backend (its matmuls); the GPU test counts flash's."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    shape = {"batch": 1, "heads": 2, "n": 40, "head_dim": 16}
    results, inputs = _run(interpreted_kernels, "attention_causal", shape, only="flash")
    with FlopCounterMode(display=False) as counter, sdpa_kernel(SDPBackend.MATH):
        torch.nn.functional.scaled_dot_product_attention(inputs["q"], inputs["k"], inputs["v"], is_causal=True)
    assert counter.get_total_flops() == 4 * 2 * 40 * 40 * 16
    assert results["flash"].flops * 2 == counter.get_total_flops()


def test_library_costs_of_other_work_match_flop_counter(interpreted_kernels) -> None:
    """The padded SDPA's own cost formula (it attends over the padding too) against the counter."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    shape = {"seqs": 2, "heads": 2, "head_dim": 16, "max_len": 40}
    results, inputs = _run(interpreted_kernels, "paged_decode", shape, ("torch",))
    with FlopCounterMode(display=False) as counter, sdpa_kernel(SDPBackend.MATH):
        interpreted_kernels.KERNELS["paged_decode"].library.run(inputs)
    assert results["sdpa padded"].flops == counter.get_total_flops() == 4 * 2 * 2 * 40 * 16


# --- LayerNorm backward: one rounding of torch's own backward, however many rows it sums --------

LN_BWD_SHAPE = {"rows": 160, "cols": 24}  # 16 bands of 10 rows on the CPU's 4 assumed SMs


def _torch_layer_norm_backward(inputs: dict) -> tuple:
    """torch's own F.layer_norm backward in fp32, on the reference kernel's inputs (upcast, not re-drawn)."""
    from rooflinectl_kernels.norms import EPS

    x, w, b = (inputs[k].detach().float().requires_grad_() for k in ("x", "w", "b"))
    out = torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, EPS)
    return torch.autograd.grad(out, (x, w, b), inputs["dy"].float())


def _outside(got, want, atol: float, rtol: float) -> list[str]:
    """'output i: n of N outside (worst err e at ref r)' for each output that misses."""
    missed = []
    for i, (g, r) in enumerate(zip(got, want)):
        err = (g.float() - r).abs()
        excess = err - (atol + rtol * r.abs())
        if (excess > 0).any():
            j = int(excess.flatten().argmax())
            missed.append(f"output {i}: {int((excess > 0).sum())} of {r.numel()} outside "
                          f"(err {float(err.flatten()[j]):.3g} at {float(r.flatten()[j]):.6g})")
    return missed


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=["bf16", "fp32"])
def test_layernorm_backward_is_torchs_own_rounded_once(interpreted_kernels, dtype) -> None:
    """The kernel computes dx, and dw and db as fp32 partial sums over bands of rows, from the
    data and rounds each output once to the data's dtype. Against torch's own fp32 layer_norm
    backward on the same inputs its error is therefore one rounding, whatever the row count:
    bf16, under one unit in the last place (2^-7 of the value: the interpreter truncates to
    bf16; a GPU rounds to nearest, half that), plus 1e-4 for fp32 summation order; fp32, the
    harness's 1e-4 (sums of a few hundred terms in another order: about n x 2^-24). The reference kernel's
    bf16 tolerance (harness.TOLERANCE, 2e-2 of the value) is wider than one rounding; this holds
    the kernel to the rounding. A running bf16 sum over the rows (torch's CPU bf16 backward does
    that for dw and db) misses the bound at this row count: the bound can tell them apart."""
    from rooflinectl_kernels.harness import TOLERANCE
    from rooflinectl_kernels.norms import _inputs, layernorm_bwd

    torch.manual_seed(0)
    inputs = _inputs(LN_BWD_SHAPE, CPU, dtype)
    want = _torch_layer_norm_backward(inputs)
    got = layernorm_bwd(inputs["dy"], inputs["x"], inputs["w"], inputs["mean"], inputs["rstd"])
    assert [g.dtype for g in got] == [dtype] * 3
    atol, rtol = (1e-4, 2.0 ** -7) if dtype == torch.bfloat16 else TOLERANCE[torch.float32]
    missed = _outside(got, want, atol, rtol)
    assert not missed, "\n".join(missed)
    if dtype == torch.bfloat16:
        x, dy = inputs["x"].float(), inputs["dy"].float()
        xhat = (x - inputs["mean"][:, None]) * inputs["rstd"][:, None]
        dw = torch.zeros(x.shape[1], dtype=torch.bfloat16)
        for row in (dy * xhat).to(torch.bfloat16):
            dw = dw + row  # rounded to bf16 at every row
        assert _outside([dw], want[1:2], atol, rtol)
