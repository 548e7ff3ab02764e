"""`rooflinectl kernels` and `rooflinectl profile` hold every reference kernel to the same roof.

Both read the kernels' launch_metadata dicts; the H200 once showed them apart (the tiled bf16
matmul on the fp16 roof in `profile` only, because the reference kernels took the precision from the
reference kernel's dtype and the profile from the declaration). Here every reference kernel runs through the
interpreter, and each launch's declaration also goes through the profile's own pipeline as a
traced kernel (tests/gpu_trace.py: the real trace parser, attribution, grouping): the unit,
precision and family of every kernel there must be its reference kernels row's, and the family the
reference kernel's. The interpreter runs bf16 tl.dot reference kernels in fp16; their declarations are given the
reference kernel's dtype back, as the GPU run declares them."""

from __future__ import annotations

import pytest
from gpu_trace import Launch, chrome_trace

from rooflinectl.capture.read.trace import from_chrome_trace
from rooflinectl.ceilings.model import Ceilings, Roof
from rooflinectl.kernel_suite import suite_table
from rooflinectl.pipeline import analyse_trace

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.triton

CEILINGS = Ceilings("Test GPU", "cuda", memory_bytes_per_s={"dram": Roof(4e12, "spec")},
                    compute_flops_per_s={f"tensor.{p}": Roof(1e15, "spec") for p in ("bf16", "fp16", "tf32")}
                    | {"simt.fp32": Roof(6e13, "spec")}, kernel_floor_s=Roof(2e-6, "spec"))
TORCH_NAMES = {"bfloat16": torch.bfloat16, "float16": torch.float16}


@pytest.fixture(scope="module")
def kernel_runs(interpreted_kernels):
    """{spec: its results on its small shape, every variant}, declarations as on the GPU."""
    from rooflinectl_kernels import declared
    from rooflinectl_kernels.harness import run_kernel

    read = declared.summarise_declaration
    runs = {}
    for name, spec in interpreted_kernels.KERNELS.items():
        ran_as, gpu = spec.dtype_for_run(), spec.dtype

        def as_on_gpu(data, ran_as=ran_as, gpu=gpu):
            if TORCH_NAMES.get(data.get("dtype")) == ran_as:
                data = {**data, "dtype": str(gpu).removeprefix("torch.")}
            return read(data)

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(declared, "summarise_declaration", as_on_gpu)
            runs[name] = run_kernel(spec, "small", torch.device("cpu"), timed=False)
    return runs


def _profiled(declared: list[dict]) -> list[tuple[str, str, str]]:
    """(unit, precision, family) of each kernel as `rooflinectl profile` places it."""
    trace = from_chrome_trace(chrome_trace([Launch("triton_launch", [], d["name"], 20.0) for d in declared]))
    trace.triton_launches = [dict(d) for d in declared]
    table, _, _ = analyse_trace(trace, "cuda", {}, CEILINGS, iterations_mode="none")
    assert (table["cost_source"] == "triton").all() and len(table) == len(set(d["name"] for d in declared))
    return list(zip(table["unit"], table["precision"], table["op_family"]))


@pytest.mark.slow
def test_suite_and_profile_hold_each_kernel_to_the_same_roof(interpreted_kernels, kernel_runs) -> None:
    from rooflinectl_kernels.registry import dtype_name

    apart = []
    for name, results in kernel_runs.items():
        spec = interpreted_kernels.KERNELS[name]
        rows = suite_table([r.to_dict() | {"time_s": 1e-3} for r in results], CEILINGS, "cuda").set_index("variant")
        for result in (r for r in results if r.kind == "triton"):
            assert result.error is None, f"{name} / {result.variant}: {result.error}"
            row = rows.loc[result.variant]
            ours = (row["unit"], row["precision"], row["op_family"])
            apart += [f"{name} / {result.variant}: kernels {ours}, profile {theirs}"
                      for theirs in _profiled(result.declared) if theirs != ours]
            if row["op_family"] != spec.family:
                apart.append(f"{name} / {result.variant}: family {row['op_family']}, the reference kernel's {spec.family}")
            if result.role == "kernel" and row["unit"] == "tensor" and row["precision"] != dtype_name(spec.dtype):
                apart.append(f"{name}: a tensor-core kernel on the {row['precision']} roof, its data {spec.dtype}")
    assert not apart, "\n".join(apart)


def test_the_bf16_matmul_is_a_bf16_tensor_gemm_in_both(kernel_runs) -> None:
    """The case the H200 caught, by hand: declared as the GPU declares it, read both ways."""
    tiled = next(r for r in kernel_runs["matmul"] if r.variant == "tiled")
    assert (tiled.unit, tiled.precision, tiled.family) == ("tensor", "bf16", "gemm")
    assert _profiled(tiled.declared) == [("tensor", "bf16", "gemm")]


def test_every_variant_is_held_to_the_ops_minimum(interpreted_kernels, kernel_runs) -> None:
    """Twins and library calls that do the reference kernel's op carry its minimum cost (the reference kernel
    kernel's declaration); the separate softmax passes keep what their kernels declare beside."""
    for name, results in kernel_runs.items():
        primary = next(r for r in results if r.role == "kernel")
        for result in results:
            if result.cost_source != "call":  # a call doing other work (bf16 weights, a padded cache)
                assert (result.flops, result.bytes) == (primary.flops, primary.bytes), f"{name} / {result.variant}"
    rows, cols = interpreted_kernels.KERNELS["softmax"].shapes["small"].values()
    passes = next(r for r in kernel_runs["softmax"] if r.variant == "separate passes")
    # bf16 x read twice, the exponentials written and read back, y written; fp32 row max and sum
    assert (passes.cost_source, passes.own_bytes) == ("op", 10 * rows * cols + 16 * rows)
    assert passes.bytes == 4 * rows * cols


def test_on_a_gpu_the_kernels_record_through_the_profilers_hook(interpreted_kernels, monkeypatch) -> None:
    """Compiled, Triton calls its launch-enter hooks with a lazy metadata object: the reference kernels
    listen through capture.triton_hook's own hook, so they read each launch as a profile does."""
    import triton

    from rooflinectl_kernels import declared
    from rooflinectl_kernels.cost import declare

    class Lazy:  # what Triton 3.6 hands a launch-enter hook
        def get(self):
            return {**declare("k", family="gemm", nbytes=10.0, flops=8.0, bits=16, tensor_core=True, dtype="bf16"),
                    "function": 1234, "stream": 0}

    monkeypatch.setattr(declared, "interpreting", lambda: False)
    sink: list[dict] = []
    with declared.recording(sink):
        triton.knobs.runtime.launch_enter_hook(Lazy())
    triton.knobs.runtime.launch_enter_hook(Lazy())  # after: no longer listened to
    assert [(d["name"], d["flops"], d["bytes"], d["precision"], d["tensor_cores"], d["family"]) for d in sink] == [
        ("k", 8.0, 10.0, "bf16", True, "gemm")]
