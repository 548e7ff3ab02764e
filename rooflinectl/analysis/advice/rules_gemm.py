"""Why a library GEMM or convolution is far from its roof: operand shapes the tensor cores cannot
take at full speed (alignment), and fallback or legacy kernels picked for them."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

import pandas as pd

from rooflinectl.analysis.advice.common import (
    TYPICAL_LIBRARY_EFFICIENCY,
    cell_float,
    cell_text,
    element_bytes,
    is_custom,
    is_short_launch,
    usable,
    where,
)
from rooflinectl.analysis.advice.gemm_kernels import (
    conv_dims,
    gemm_dims,
    is_gemv_like,
    is_helper,
    is_simt_gemm,
    kernel_alignment,
    kernel_arch,
)
from rooflinectl.analysis.advice.registry import AdviceContext, Finding, make_finding, rule
from rooflinectl.analysis.advice.rules_precision import DECODE_MAX_M
from rooflinectl.analysis.occupancy import compute_capability
from rooflinectl.units import percent, seconds

ALIGN_BYTES = 16  # tensor-core kernels load operands in 16-byte vectors: 8 bf16/fp16, 16 fp8/int8, 4 tf32
TILE_MULTIPLE = 64  # the best kernels' tiles: a large dimension padded to a multiple of 64 fills them
LARGE_DIM = 512  # from this size a dimension is padded to TILE_MULTIPLE, below it to the alignment
MIN_GEMM_DIM = 64  # smaller GEMM dimensions make a skinny product (gemm.skinny), not an alignment case
LEGACY_GAP = 0.8  # a legacy kernel under this share of its modern peers' efficiency is worth a finding


def required_multiple(row: pd.Series) -> int:
    """Elements per 16-byte vector of the row's element size: 8 for 16-bit, 16 for 8-bit, 4 for fp32."""
    return max(1, int(ALIGN_BYTES // element_bytes(row)))


def padded_size(dim: int, multiple: int) -> int:
    """The size to pad to: a multiple of 64 for a large dimension, else of the alignment."""
    unit = TILE_MULTIPLE if dim >= LARGE_DIM else multiple
    return int(math.ceil(dim / unit) * unit)


@dataclass(frozen=True)
class Misaligned:
    """A row's dimensions that break the 16-byte alignment, and their padded sizes."""

    family: str
    dims: dict[str, int]  # name -> size, only the misaligned ones
    padded: dict[str, int]
    multiple: int  # the alignment in elements
    work_ratio: float  # padded FLOPs / FLOPs (>= 1)


def _unaligned_kernel(row: pd.Series, multiple: int) -> bool:
    """The kernel name says it ran unaligned (alignN below the requirement) or on a fallback path."""
    name = cell_text(row, "kernel")
    align = kernel_alignment(name)
    return (align is not None and align < multiple) or is_gemv_like(name)


def misaligned(row: pd.Series) -> Misaligned | None:
    """The misaligned dimensions of a 16/8-bit (or TF32) GEMM or convolution row, None if aligned.

    N and K are leading dimensions of contiguous operands (the output's rows, the activation's rows,
    a Linear weight's rows), so they count whenever misaligned; M is one only for a transposed
    operand (backward passes), so it counts when the kernel name also shows an unaligned kernel.
    """
    family = cell_text(row, "op_family")
    multiple = required_multiple(row)
    if cell_text(row, "unit") != "tensor" or multiple <= 1:
        return None
    if family == "gemm":
        dims = gemm_dims(cell_text(row, "op"), cell_text(row, "shapes"))
        if dims is None:
            return None
        named = {"N": dims.n, "K": dims.k}
        if _unaligned_kernel(row, multiple):
            named["M"] = dims.m
        bad = {k: v for k, v in named.items() if v % multiple and v >= MIN_GEMM_DIM}
    elif family == "conv":
        conv = conv_dims(cell_text(row, "op"), cell_text(row, "shapes"))
        if conv is None or conv.groups != 1:
            return None
        bad = {k: v for k, v in conv.named().items() if v % multiple}
    else:
        return None
    if not bad:
        return None
    padded = {k: padded_size(v, multiple) for k, v in bad.items()}
    ratio = math.prod(padded[k] / v for k, v in bad.items())
    return Misaligned(family, bad, padded, multiple, ratio)


def _modern(row: pd.Series, arch: int | None) -> bool:
    name = cell_text(row, "kernel")
    own = kernel_arch(name)
    return not (arch and own and own < arch) and not is_gemv_like(name) and not is_simt_gemm(name)


PeerTimes = dict[tuple[str, str], tuple[float, float]]  # (family, precision) -> (time_s, roof_time_s)


def peer_times(ctx: AdviceContext) -> PeerTimes:
    """Time and roof time of this profile's aligned, modern library kernels (calls of at least
    5 us), per family and precision: the peers a misaligned or legacy kernel is held to. Those
    kernels are never peers themselves (misaligned, or not modern), so one table serves all."""
    arch = device_arch(ctx)
    peers: PeerTimes = {}
    for _, other in ctx.kernels.iterrows():
        if is_custom(other) or not usable(other) or is_helper(cell_text(other, "kernel")):
            continue
        if is_short_launch(other) or misaligned(other) or not _modern(other, arch):
            continue
        key = (cell_text(other, "op_family"), cell_text(other, "precision"))
        time_s, roof_s = peers.get(key, (0.0, 0.0))
        peers[key] = (time_s + cell_float(other, "time_s", 0.0), roof_s + cell_float(other, "roof_time_s", 0.0))
    return peers


def peer_efficiency(peers: PeerTimes, row: pd.Series) -> tuple[float, str]:
    """The efficiency the peers of the row's family and precision reach (time-weighted), else a
    typical library figure."""
    family, precision = cell_text(row, "op_family"), cell_text(row, "precision")
    time_s, roof_s = peers.get((family, precision), (0.0, 0.0))
    if time_s > 0 and roof_s > 0:
        return min(roof_s / time_s, 1.0), f"the aligned {family} kernels of this profile ({precision})"
    return TYPICAL_LIBRARY_EFFICIENCY.get(family, 0.6), f"a typical library {family}"


def device_arch(ctx: AdviceContext) -> int | None:
    """The GPU's architecture as an sm number (90 for compute capability 9.0), None if unknown."""
    cc = compute_capability(ctx.ceilings) if ctx.on_gpu else None
    return cc[0] * 10 + cc[1] if cc else None


def _kernel_note(row: pd.Series, arch: int | None) -> str:
    name = cell_text(row, "kernel")
    notes = []
    align = kernel_alignment(name)
    if align is not None and align < required_multiple(row):
        notes.append(f"align{align}: operands loaded {align} element(s) at a time")
    own = kernel_arch(name)
    if arch and own and own < arch:
        notes.append(f"a kernel built for sm_{own} on this sm_{arch} GPU")
    if is_gemv_like(name):
        notes.append("a matrix-vector kernel on CUDA cores")
    return f" Its kernel {name} is {'; '.join(notes)}." if notes else ""


def _pad_advice(case: Misaligned) -> str:
    parts = []
    for name, size in case.dims.items():
        padded = case.padded[name]
        by128 = int(math.ceil(size / 128) * 128)
        extra = f" (of 128: {by128})" if size >= LARGE_DIM and by128 != padded else (
            " (also a multiple of 128)" if size >= LARGE_DIM and padded % 128 == 0 else "")
        parts.append(f"{name} {size} -> {padded}{extra}")
    if case.family == "conv":
        return (f"Pad the channels to a multiple of {case.multiple}: {', '.join(parts)} (zero channels: "
                "F.pad the input's channel dimension and give the conv that many input channels; "
                "their weights stay zero), or channels_last with 4 input channels for an RGB stem.")
    return (f"Pad to a multiple of {TILE_MULTIPLE} (of {case.multiple} at least): {', '.join(parts)}. For a "
            "vocabulary, round the embedding and LM head up (e.g. GPT-2's 50257 -> 50304) and mask or slice "
            "the extra logits; for a hidden size, choose a multiple of 64. torch.compile pads matmul inputs "
            "itself (torch._inductor.config.shape_padding).")


@rule(id="gemm.alignment", title="Pad GEMM / conv dimensions the tensor cores cannot take", severity="warning")
def alignment(ctx: AdviceContext) -> list[Finding]:
    """A 16-bit (8 for 8-bit, 4 for TF32) GEMM dimension or conv channel count that is not a
    multiple of 16 bytes of elements (N, K of a GEMM: leading dimensions; M when the kernel name
    also shows an unaligned kernel; C_in, C_out of a convolution), on a GEMM or conv below the
    efficiency its aligned peers reach. Unaligned operands force kernels that load one element
    at a time (`align1`) or older architectures' paths. One finding per set of misaligned sizes.

    Estimate: padded, the op does padded/original times the work at the efficiency this
    profile's aligned, modern kernels of the same family and precision reach (time-weighted; a
    typical library figure without them): new time = roof_time_s x work ratio / that efficiency;
    saving = time - new time.
    """
    if not ctx.on_gpu:
        return []
    arch, peers = device_arch(ctx), peer_times(ctx)
    groups: dict[tuple[str, tuple[int, ...]], list[tuple[int, Misaligned, float]]] = defaultdict(list)
    for i, row in ctx.kernels.iterrows():
        case = misaligned(row) if usable(row) and not is_custom(row) else None
        if case is None or is_short_launch(row):
            continue
        peer, _ = peer_efficiency(peers, row)
        new_s = cell_float(row, "roof_time_s", 0.0) * case.work_ratio / peer
        saving_s = cell_float(row, "time_s", 0.0) - new_s
        if saving_s > 0:
            groups[(case.family, tuple(sorted(case.dims.values())))].append((int(i), case, saving_s))
    findings = []
    for (family, sizes), items in sorted(groups.items()):
        rows = [i for i, _, _ in items]
        first = ctx.kernels.iloc[rows[0]]
        time_s = sum(cell_float(ctx.kernels.iloc[i], "time_s", 0.0) for i in rows)
        eff = sum(cell_float(ctx.kernels.iloc[i], "roof_time_s", 0.0) for i in rows) / time_s
        peer, source = peer_efficiency(peers, first)
        case = items[0][1]
        named: dict[int, set[str]] = defaultdict(set)
        for _, c, _ in items:
            for name, size in c.dims.items():
                named[size].add(name)
        dims = ", ".join(f"{' or '.join(sorted(names, key='NKM'.find if family == 'gemm' else str))} = {size}"
                         for size, names in sorted(named.items()))
        findings.append(make_finding(
            "gemm.alignment",
            evidence=(f"{len(rows)} {family} group(s) with {dims}, not a multiple of {case.multiple} "
                      f"({cell_text(first, 'precision')}: {ALIGN_BYTES} bytes), take {seconds(time_s, decimals=2)} at "
                      f"{percent(eff)} of their roof; {source} reach {percent(peer)}. First: {where(first)}."
                      + _kernel_note(first, arch)),
            recommendation=_pad_advice(case),
            est_saving_s=sum(s for _, _, s in items),
            rows=rows,
            numbers={"time_s": time_s, "efficiency": eff, "peer_efficiency": peer, "work_ratio": case.work_ratio,
                     **{f"dim_{k}": float(v) for k, v in case.dims.items()},
                     **{f"padded_{k}": float(v) for k, v in case.padded.items()}},
            subject=f"{family} {', '.join(str(s) for s in sizes)} -> "
                    f"{', '.join(str(case.padded[k]) for k in case.dims)}",
        ))
    return findings


def _legacy_reason(row: pd.Series, arch: int | None) -> str | None:
    """Why this row's kernel is a fallback, or None when it is the modern path."""
    name = cell_text(row, "kernel")
    own = kernel_arch(name)
    if arch and own and own < arch:
        return f"built for sm_{own}, an older architecture than this sm_{arch} GPU"
    dims = gemm_dims(cell_text(row, "op"), cell_text(row, "shapes"))
    wide = dims is not None and dims.m > DECODE_MAX_M and dims.n > DECODE_MAX_M
    if wide and cell_text(row, "precision") in ("bf16", "fp16", "fp8", "int8"):
        if is_gemv_like(name):
            return "a matrix-vector kernel on CUDA cores for a matrix product"
        if is_simt_gemm(name):
            return "a CUDA-core (non tensor-core) kernel for a 16-bit or 8-bit product"
    return None


def _legacy_fix(row: pd.Series) -> str:
    if cell_text(row, "precision") == "int8":
        return ("Int8 matmuls (torch._int_mm) run older-architecture kernels on this GPU, as the kernel name "
                "shows: use fp8 instead (torch._scaled_mm with float8_e4m3fn operands and scales, or torchao's "
                "Float8DynamicActivationFloat8WeightConfig), which runs the current tensor-core path.")
    if cell_text(row, "op_family") == "conv":
        return ("Let cuDNN try its kernels and keep the fastest (torch.backends.cudnn.benchmark = True), use "
                "channels_last (model.to(memory_format=torch.channels_last)) with bf16/fp16, and keep channel "
                "counts multiples of 8.")
    return ("Make the operands contiguous with 16-byte-aligned leading dimensions (a transposed or sliced "
            "operand with an odd stride forces older kernels: .contiguous() it once), keep the dtype bf16/fp16, "
            "and let cuBLASLt choose (torch.backends.cuda.preferred_blas_library('cublaslt')); a newer torch/CUDA "
            "or torch.compile(mode='max-autotune') also reaches the current architecture's kernels.")


@rule(id="gemm.legacy-kernel", title="A GEMM ran on a fallback or legacy kernel", severity="warning")
def legacy_kernel(ctx: AdviceContext) -> list[Finding]:
    """A library GEMM or convolution kernel whose name shows an older architecture's path
    (cutlass_75, sm80 or ampere kernels, s1688/s16816 mma shapes, on an sm_90 GPU), or a
    matrix-vector / CUDA-core kernel for a wide 16-bit or 8-bit product, below 80% of the
    efficiency this profile's modern kernels of the same family and precision reach. Rows with
    misaligned dimensions are left to gemm.alignment (the alignment is why the fallback ran).

    Estimate: on the modern path the work runs at the peers' efficiency (time-weighted, else a
    typical library figure): saving = time x (1 - own efficiency / peer efficiency).
    """
    if not ctx.on_gpu:
        return []
    arch, peers = device_arch(ctx), peer_times(ctx)
    findings = []
    for i, row in ctx.kernels.iterrows():
        if cell_text(row, "op_family") not in ("gemm", "conv") or is_custom(row) or not usable(row):
            continue
        if cell_text(row, "unit") != "tensor" or misaligned(row) or is_short_launch(row):
            continue
        reason = _legacy_reason(row, arch)
        if reason is None:
            continue
        eff = cell_float(row, "efficiency", 0.0)
        peer, source = peer_efficiency(peers, row)
        if eff >= LEGACY_GAP * peer:
            continue
        time_s = cell_float(row, "time_s", 0.0)
        findings.append(make_finding(
            "gemm.legacy-kernel",
            evidence=(f"{where(row)} ran {cell_text(row, 'kernel')}, {reason}: {percent(eff)} of its roof over "
                      f"{seconds(time_s, decimals=2)}; {source} reach {percent(peer)}."),
            recommendation=_legacy_fix(row),
            est_saving_s=time_s * (1.0 - eff / peer),
            rows=(int(i),),
            numbers={"time_s": time_s, "efficiency": eff, "peer_efficiency": peer,
                     "kernel_arch": float(kernel_arch(cell_text(row, "kernel")) or 0), "device_arch": float(arch or 0)},
            subject=cell_text(row, "kernel"),
        ))
    return findings
