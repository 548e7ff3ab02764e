"""Run a reference kernel: check each variant against the fp32 reference, read its declared cost, time it.

Timing on a GPU is `triton.testing.do_bench` (CUDA events, warm-up, L2 flushed between calls,
the median kept); memory-bound reference kernels' large inputs are several times the 60 MiB L2 of an H200
anyway. Under the interpreter (CPU) a perf_counter median of a few calls: the numbers teach
nothing about speed there, and the command says so.

One variant that fails (a compile error, out of memory) is recorded with its error and the
others still run: a reference kernel run is never lost to one kernel.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from rooflinectl.capture.run.triton_hook import summarise_declaration
from rooflinectl.costs import TritonDeclaration, cost_of
from rooflinectl_kernels.declared import recording
from rooflinectl_kernels.registry import KernelSpec, Variant, dtype_name, interpreting, shape_text

# (atol, rtol) per dtype of the data: one element-wise op rounds by about one unit in the last place.
# A unit is at most 2^-7 of the value in bf16 (8 significant bits), 2^-10 in fp16; rounding to
# nearest is off by half a unit (a whole one truncated, as Triton's interpreter converts fp32 to
# bf16). rtol is about 2.5 units in bf16 and 5 in fp16, for outputs a few rounded steps from the
# data; fp32 allows sums of a few thousand terms in another order than the reference's. The
# LayerNorm backward kernel rounds each output once and a test holds it to one unit (norms.py).
# Not widened for the library's reductions: torch's CPU bf16 LayerNorm backward misses it on a
# weight-gradient element at the small size, by an error that grows with the rows summed (README),
# so a tolerance that admitted it would admit a broken kernel. A torch variant's miss is reported
# ("differs") and never fails the run; a Triton kernel's fails it (cli/kernels_cmd.py).
TOLERANCE = {
    torch.float32: (1e-4, 1e-4),
    torch.float16: (2e-3, 5e-3),
    torch.bfloat16: (1.6e-2, 2e-2),
}
CPU_TIMING_CALLS = 3


@dataclass
class Check:
    ok: bool
    max_abs_err: float
    atol: float
    rtol: float
    worst: list[str] = field(default_factory=list)  # the worst mismatches, as text


@dataclass
class VariantResult:
    name: str  # the reference kernel's
    variant: str
    role: str
    kind: str
    family: str
    shapes: str
    dtype: str
    kernels: list[str] = field(default_factory=list)  # declared launch names, one per launch in one call
    declared: list[dict[str, Any]] = field(default_factory=list)  # each launch's declaration, as the profiler reads it
    time_s: float | None = None  # median per call
    flops: float | None = None  # the cost the variant is held to on the roofline (see cost_source)
    bytes: float | None = None
    own_flops: float | None = None  # what its kernels declared (or its own formula), when that is not flops/bytes
    own_bytes: float | None = None
    unit: str = ""  # the roof, as the profiler decides it from a declaration (costs.TritonDeclaration)
    precision: str = ""
    # triton: its kernels declared it; op: the op's minimum (the reference kernel's declaration); call: the call's own formula
    cost_source: str = ""
    check: Check | None = None
    autotune: list[dict[str, Any]] = field(default_factory=list)
    note: str = ""
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _tensors(out: Any) -> list[torch.Tensor]:
    return list(out) if isinstance(out, (tuple, list)) else [out]


def compare(out: Any, ref: Any, dtype: torch.dtype, scale: float = 1.0, show: int = 3,
            atol_scale: float = 1.0) -> Check:
    """Every output within atol + rtol * |ref| of the fp32 reference; the worst listed. Computed
    where the tensors are (a GPU checks 134M elements in milliseconds; only the worst come back)."""
    atol, rtol = (t * scale for t in TOLERANCE.get(dtype, TOLERANCE[torch.float32]))
    atol *= atol_scale
    outs, refs = _tensors(out), _tensors(ref)
    if len(outs) != len(refs):
        return Check(False, math.inf, atol, rtol, [f"{len(outs)} outputs, the reference has {len(refs)}"])
    ok, worst_err, worst = True, 0.0, []
    for i, (o, r) in enumerate(zip(outs, refs)):
        if tuple(o.shape) != tuple(r.shape):
            return Check(False, math.inf, atol, rtol, [f"output {i}: shape {tuple(o.shape)}, expected {tuple(r.shape)}"])
        got, want = o.detach().float().flatten(), r.detach().to(o.device).float().flatten()
        err = (got - want).abs().nan_to_num(nan=math.inf)
        excess = err - (atol + rtol * want.abs())
        if err.numel():
            worst_err = max(worst_err, float(err.max()))
        bad = int((excess > 0).sum())
        if bad:
            ok = False
            for flat in torch.topk(excess, min(show, bad)).indices.tolist():
                index = [int(j) for j in torch.unravel_index(torch.tensor(flat), tuple(o.shape))] if o.dim() else []
                worst.append(f"output {i}{index}: got {float(got[flat]):.6g}, expected {float(want[flat]):.6g} "
                             f"({bad} of {err.numel()} outside)")
        del got, want, err, excess
    return Check(ok, worst_err, atol, rtol, worst)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_call(fn: Any, device: torch.device) -> float:
    """Median seconds per call."""
    if device.type == "cuda":
        import triton.testing

        return float(triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")) / 1e3
    samples = []
    for _ in range(CPU_TIMING_CALLS):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def _autotune_report(kernels: tuple[Any, ...], before: list[Any]) -> list[dict[str, Any]]:
    """What each autotuned kernel chose, and every config's median time when it benchmarked
    during this variant's first call (`before`: its timings object before that call)."""
    out = []
    for kernel, earlier in zip(kernels, before):
        best = getattr(kernel, "best_config", None)
        timings = getattr(kernel, "configs_timings", None)
        timings = timings if timings is not None and timings is not earlier else {}
        name = getattr(getattr(kernel, "base_fn", None), "__name__", "kernel")
        out.append({
            "kernel": name,
            "configs": len(getattr(kernel, "configs", []) or []),
            "best": _config_dict(best) if best is not None else None,
            "timings_s": [[_config_dict(c), float(t[0] if isinstance(t, (list, tuple)) else t) / 1e3]
                          for c, t in timings.items()],
        })
    return out


def _config_dict(config: Any) -> dict[str, Any]:
    return {**config.kwargs, "num_warps": config.num_warps, "num_stages": config.num_stages}


def _hold_to(result: VariantResult, declared: list[dict[str, Any]]) -> None:
    """Set the variant's cost and roof from declarations read the profiler's way: its launches
    as one declaration (costs/triton_declared.py combined_declaration), held as a profile holds it."""
    cost = cost_of(TritonDeclaration(tuple(declared)))
    if cost is None:
        raise RuntimeError("its declared cost has no bytes")
    result.flops, result.bytes = cost.flops, cost.bytes
    result.unit, result.precision, result.family = cost.unit, cost.dtype, cost.family


def _hold_to_op_minimum(result: VariantResult, primary: VariantResult) -> None:
    """A Triton twin that declares more than the op's minimum (the reference kernel's declaration)
    is held to that minimum, its own declaration kept beside: the gap is what the technique buys."""
    if primary.bytes is None or (result.flops, result.bytes) == (primary.flops, primary.bytes):
        return
    result.own_flops, result.own_bytes = result.flops, result.bytes
    result.flops, result.bytes = primary.flops, primary.bytes
    result.cost_source = "op"


def run_variant(spec: KernelSpec, variant: Variant, inputs: dict[str, Any], ref: Any, device: torch.device,
                primary: VariantResult | None, *, timed: bool = True) -> VariantResult:
    """Warm up (compile, autotune), check, record the declared cost of one call, time."""
    dtype = spec.dtype_for_run()
    result = VariantResult(spec.name, variant.name, variant.role, variant.kind, spec.family,
                           shape_text(inputs["shape"]), dtype_name(dtype), note=variant.note)
    try:
        before = [getattr(k, "configs_timings", None) for k in variant.autotuned]
        out = variant.run(inputs)
        _sync(device)
        result.autotune = _autotune_report(variant.autotuned, before)
        result.check = compare(out, ref, dtype, spec.tolerance_scale, atol_scale=spec.atol_scale)
        del out
        if variant.kind == "triton":
            declared: list[dict[str, Any]] = []
            with recording(declared):
                variant.run(inputs)
                _sync(device)
            if not declared:
                raise RuntimeError("its kernels declared no cost (launch_metadata) during a call")
            result.kernels = [d["name"] for d in declared]
            result.declared = declared
            _hold_to(result, declared)
            result.cost_source = "triton"
            if primary is not None:
                _hold_to_op_minimum(result, primary)
        elif variant.cost is not None:
            own = summarise_declaration(variant.cost(inputs))
            result.declared = [own] if own is not None else []
            _hold_to(result, result.declared)
            result.cost_source = "call"
        elif primary is not None and primary.bytes is not None:
            result.flops, result.bytes = primary.flops, primary.bytes
            result.unit, result.precision, result.family = primary.unit, primary.precision, primary.family
            result.cost_source = "op"
        if timed:
            result.time_s = time_call(lambda: variant.run(inputs), device)
    except Exception as exc:  # one broken variant must not lose the others' figures
        result.error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]
    return result


def run_kernel(spec: KernelSpec, size: str, device: torch.device, *, timed: bool = True,
               shape: dict[str, int] | None = None, seed: int = 0) -> list[VariantResult]:
    """All variants of one reference kernel on one shape: the reference kernel first (its declared cost is
    the op's minimum cost, which the torch variants carry unless they declare their own)."""
    shape = dict(shape or spec.shapes[size])
    torch.manual_seed(seed)
    dtype = spec.dtype_for_run()
    results: list[VariantResult] = []
    try:
        inputs = spec.make_inputs(shape, device, dtype)
        inputs["shape"] = shape
        ref = spec.reference(inputs)
    except Exception as exc:
        message = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]
        return [VariantResult(spec.name, v.name, v.role, v.kind, spec.family, shape_text(shape),
                              dtype_name(dtype), error=f"inputs: {message}") for v in spec.variants]
    primary = run_variant(spec, spec.primary, inputs, ref, device, None, timed=timed)
    results.append(primary)
    for variant in spec.variants:
        if variant is not spec.primary:
            results.append(run_variant(spec, variant, inputs, ref, device, primary, timed=timed))
    if interpreting():
        for r in results:
            r.note = "; ".join(p for p in (r.note, "Triton interpreter on CPU: times are not GPU figures") if p)
    del inputs, ref
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return results
