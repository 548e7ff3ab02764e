"""How a reference kernel declares its cost: the dict its `launch_metadata` function returns.

This is the one place the convention is written (kernels/README.md points here). The dict is
read in one place too, the profiler's: rooflinectl/capture/run/triton_hook.py
(`summarise_declaration`) and rooflinectl/costs/triton_declared.py (`declared_cost`: the unit,
precision and family that pick the roof). `rooflinectl kernels` reads it through the same two
functions, so a reference kernel is held to the same roof whether it is profiled or run by `rooflinectl kernels`.

    @triton.jit(launch_metadata=my_cost)      # my_cost(grid, metadata, args) -> dict
    def my_kernel(...): ...

Keys, Proton's names, so that Proton, `rooflinectl profile` and `rooflinectl kernels` read the
same dict:
  name                str    the name traces show for the launch
  flops8 / flops16 / flops32 / flops64
                      float  FLOPs (an FMA counts 2) done at that bit width. The width is the
                             width of the arithmetic: a bf16 or fp16 `tl.dot` counts flops16;
                             element-wise math on bf16 data that the kernel upcasts to fp32
                             counts flops32. Comparisons, selections and moves count 0 (the
                             cost model's convention, README "Cost model").
  bytes               float  the minimum DRAM traffic of this launch: each tensor it reads read
                             once, each tensor it writes written once. A kernel that re-reads
                             (a strided copy, a naive matmul, the three-pass long-row softmax)
                             still declares that minimum: the gap to the roof is what the technique buys.
                             A twin made of several kernels (softmax "separate passes") cannot
                             declare less than its launches move between them: each launch
                             declares its own tensors, intermediates included, because that is
                             what a profile of such code must hold each launch to. The reference kernel
                             run holds every variant to the op's minimum (what the reference kernel's own
                             kernel declares) and shows the kernels' own sum beside it
                             (rooflinectl/kernel_suite.py).
  tensor_cores        bool   our addition (Proton has no such key): True when the FLOPs run on
                             tensor cores (`tl.dot`), so the roof is the tensor roof of that
                             width; False: CUDA cores. Absent: 8- and 16-bit FLOPs are taken to
                             run on tensor cores, 32- and 64-bit ones on CUDA cores.
  dtype               str    "bf16" or "fp16": which 16-bit format the flops16 are in (absent:
                             fp16).
  family              str    our addition: what op the kernel is ("gemm", "attention", ... as
                             rooflinectl/costs/registry.FAMILIES), so advice can hold a custom
                             GEMM against the library's (library.fallback). Absent: "other".
                             Every reference kernel declares its family.

`args` holds the launch's arguments by parameter name (tensors, ints, and the constexprs,
autotuned ones included). Cost functions read only shapes, dtypes and integer arguments, never
tensor values: reading a value would synchronise the device at every launch.
"""

from __future__ import annotations

from typing import Any

WIDTH_KEYS = {8: "flops8", 16: "flops16", 32: "flops32", 64: "flops64"}
TENSOR_CORE_KEY = "tensor_cores"
FAMILY_KEY = "family"


def declare(name: str, *, family: str, nbytes: float, flops: float | dict[int, float] = 0.0, bits: int = 32,
            tensor_core: bool = False, dtype: Any = None) -> dict[str, Any]:
    """The launch_metadata dict of one launch (see the module docstring for the keys).

    `flops` at width `bits`, or a dict {bits: flops} for a kernel that computes at two widths
    (a bf16 tensor-core product scaled in fp32, say). `family` is required, and so is `dtype`
    when there are 16-bit FLOPs: left out, the profiler reads "other" and fp16 (on the H200 a
    bf16 GEMM was once held to the fp16 roof that way)."""
    by_width = flops if isinstance(flops, dict) else {bits: flops}
    unknown = [b for b in by_width if b not in WIDTH_KEYS]
    if unknown:
        raise ValueError(f"bit width(s) {unknown} not among {sorted(WIDTH_KEYS)}")
    if by_width.get(16) and dtype is None:
        raise ValueError(f"{name}: 16-bit FLOPs need their format (dtype bf16 or fp16)")
    out: dict[str, Any] = {"name": name, **{WIDTH_KEYS[b]: float(f) for b, f in by_width.items()},
                           "bytes": float(nbytes)}
    # Always said: left out, the profiler takes 8- and 16-bit FLOPs to run on tensor cores, so an
    # element-wise bf16 kernel declared with tensor_core=False would be held to the tensor roof.
    out[TENSOR_CORE_KEY] = bool(tensor_core)
    out[FAMILY_KEY] = family
    if dtype is not None:  # a torch dtype or its name: "bfloat16" and "float16" name the 16-bit format
        out["dtype"] = str(dtype).replace("torch.", "")
    return out


def tensor_bytes(*tensors: Any) -> int:
    """Bytes of the tensors, each counted once (None is skipped)."""
    return sum(t.numel() * t.element_size() for t in tensors if t is not None)
