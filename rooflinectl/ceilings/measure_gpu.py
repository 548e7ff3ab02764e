"""Measure a GPU's ceilings: DRAM and L2 bandwidth, tensor-core and CUDA-core peaks, launch floor,
and the host link (copies to and from pinned and pageable host memory, and to a peer GPU).

Timing: CUDA events around each call, warm-up first, the median of the repeats; random data
(zeros make GEMMs draw less power and run faster). An NVML snapshot is taken while the timed
calls are queued, so a flagged figure comes with the clocks and throttle reasons of its moment.
Each step has a time slice and the whole run a deadline; a step that does not fit is skipped
and says so. Needs CUDA; triton is optional (torch fallbacks are named in `method`).
"""

from __future__ import annotations

import statistics
import warnings
from collections.abc import Callable
from typing import Any

from rooflinectl.ceilings.detect import GpuInfo, nvml_snapshot
from rooflinectl.ceilings.gpu_kernels import (
    FMA_BLOCK,
    L1_BLOCK,
    L1_STRIDE,
    L1_WINDOW,
    READ_BLOCK,
    fma_flops,
    l1_bytes,
    triton_kernels,
)
from rooflinectl.ceilings.measurement import Measurement

GIB = 1 << 30
# (m, n, k); the best median counts. 4096^3 too: at 8192^3 the library's sustained run can sit
# under what a shorter GEMM reaches (a Triton bf16 GEMM at 4096^3 ran at 1.07x the 8192^3 figure).
# And an MLP's up-projection, 4096 x 8192 x 4096: on the H200 cuBLAS ran [4096, 4096] x [4096, 8192]
# in bf16 at 812 TFLOP/s while the two squares' medians gave 772 (2026-11-30), a roof under a GEMM.
# Issue 29: the best of a few shapes is not an upper bound (the LM head's weight-gradient GEMM, an NT
# layout, ran at 880 TFLOP/s against a measured 793), so the measured figure is only the achievable
# line; the roof is the clock-scaled spec. Layouts (NT, TN), a long K and a large M x N are tried too,
# to bring the achievable line close to what real GEMMs reach: (m, n, k[, layout]).
GEMM_SHAPES = ((4096, 4096, 4096), (4096, 8192, 4096), (8192, 8192, 8192))
WIDE_GEMM_SHAPES = GEMM_SHAPES + ((4096, 8192, 4096, "NT"), (4096, 8192, 4096, "TN"), (4096, 4096, 32768),
                                  (16384, 16384, 4096))  # bf16 and fp16, what training runs in
TF32_SHAPES = ((8192, 8192, 8192), (16384, 16384, 8192))  # TF32 gains from the larger one
FMA_ITERS = 512
STEP_BUDGET_S = 0.25 # time slice for the timed repeats of one case


def time_cuda(fn: Callable[[int], Any], *, budget_s: float = STEP_BUDGET_S, min_reps: int = 5,
              max_reps: int = 30, warmup: int = 2, index: int = 0) -> tuple[float, int, dict]:
    """(median seconds per call, repeats, NVML snapshot while running). fn gets the repeat number."""
    import torch

    for i in range(warmup):
        fn(i)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn(warmup)
    end.record()
    end.synchronize()
    once_s = max(start.elapsed_time(end) / 1e3, 1e-7)
    reps = int(min(max(budget_s / once_s, min_reps), max_reps))
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(reps)]
    for i, (a, b) in enumerate(events):
        a.record()
        fn(i)
        b.record()
    clocks = nvml_snapshot(index=index)  # taken while the queued calls run
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) / 1e3 for a, b in events), reps, clocks


def _buffers(info: GpuInfo, count: int) -> tuple[list[Any], str]:
    """`count` random fp32 buffers, each >= 4x L2 and >= 2 GiB where memory allows."""
    import torch

    free_bytes, _total = torch.cuda.mem_get_info()
    l2 = info.l2_bytes or 64 << 20
    want = max(4 * l2, 2 * GIB)
    size = min(want, int(free_bytes * 0.7 / (count + 1)))
    size -= size % (READ_BLOCK * 4 * 64)
    note = "" if size >= 4 * l2 else f"buffers only {size / l2:.1f}x L2: memory is short"
    return [torch.rand(size // 4, device="cuda") for _ in range(count)], note


def measure_dram(info: GpuInfo) -> list[Measurement]:
    """Read (torch.sum, and Triton when present: best kept), copy and write over rotated buffers."""
    import torch

    bufs, short = _buffers(info, 3)
    nbytes = bufs[0].numel() * 4
    rot = len(bufs)
    what = f"{rot} x {nbytes / GIB:.2f} GiB fp32 buffers, rotated"
    out: list[Measurement] = []
    t, reps, clocks = time_cuda(lambda i: torch.sum(bufs[i % rot]), index=info.index)
    best = (nbytes / t, f"torch.sum over {what}, median of {reps}", clocks)
    kernels = triton_kernels()
    if kernels is not None:
        sms = info.sms or 100
        partial = torch.empty(sms * 8 * READ_BLOCK, device="cuda")
        n = bufs[0].numel()

        def triton_read(i: int) -> None:
            # two passes, so DRAM and L2 share one compiled kernel (passes == 1 would specialise)
            kernels.read[(sms * 8,)](bufs[i % rot], partial, n, 2, BLOCK=READ_BLOCK, num_warps=8)

        t, reps, clocks = time_cuda(triton_read, index=info.index)
        if 2 * nbytes / t > best[0]:
            best = (2 * nbytes / t, f"Triton streaming read (2 passes) over {what}, median of {reps}",
                    clocks)
    out.append(Measurement("dram.read", best[0], "bytes/s", best[1], short, best[2]))
    t, reps, clocks = time_cuda(lambda i: bufs[(i + 1) % rot].copy_(bufs[i % rot]), index=info.index)
    out.append(Measurement("dram.copy", 2 * nbytes / t, "bytes/s",
                           f"copy_ (read + write counted) over {what}, median of {reps}", short, clocks))
    t, reps, clocks = time_cuda(lambda i: bufs[i % rot].fill_(1.5 + i), index=info.index)
    out.append(Measurement("dram.write", nbytes / t, "bytes/s",
                           f"fill_ (write only) over {what}, median of {reps}", short, clocks))
    return out


def measure_l2(info: GpuInfo) -> list[Measurement]:
    """Re-read a working set of a quarter of L2 many times (L1 bypassed where Triton is used)."""
    import torch

    if not info.l2_bytes:
        return [Measurement("l2.read", None, "bytes/s", note="L2 size unknown: not measured")]
    n = (info.l2_bytes // 4 // 4) // READ_BLOCK * READ_BLOCK
    x = torch.rand(n, device="cuda")
    passes = max(1, int(4 * GIB // (n * 4)))
    total = passes * n * 4
    what = f"{n * 4 / 2**20:.0f} MiB working set (L2/4) read {passes} times"
    kernels = triton_kernels()
    if kernels is not None:
        sms = info.sms or 100
        partial = torch.empty(sms * 8 * READ_BLOCK, device="cuda")

        def fn(i: int) -> None:
            kernels.read[(sms * 8,)](x, partial, n, passes, BLOCK=READ_BLOCK, num_warps=8)

        method = f"Triton .cg read, {what}"
    else:
        expanded = x.expand(passes, n)

        def fn(i: int) -> None:
            torch.sum(expanded)

        method = f"torch.sum over a stride-0 expand, {what}"
    t, reps, clocks = time_cuda(fn, index=info.index)
    return [Measurement("l2.read", total / t, "bytes/s", f"{method}, median of {reps}", "", clocks)]


HOST_COPY_BYTES = 256 << 20  # large enough that the ~10 us per-copy cost is under 1%


def measure_host_link(info: GpuInfo) -> list[Measurement]:
    """Host-to-device and device-to-host copies of 256 MiB from pinned memory (the link's DMA
    rate) and from pageable memory (the driver stages it through a pinned buffer: what
    `tensor.to("cuda")` of an ordinary CPU tensor gets), CUDA events around each copy."""
    import torch

    n = HOST_COPY_BYTES // 4
    device = torch.empty(n, device="cuda")
    out: list[Measurement] = []
    for memory in ("pinned", "pageable"):
        host = torch.rand(n, pin_memory=memory == "pinned")
        copies = (("htod", lambda i, h=host: device.copy_(h, non_blocking=True)),
                  ("dtoh", lambda i, h=host: h.copy_(device, non_blocking=True)))
        for direction, copy in copies:
            t, reps, clocks = time_cuda(copy, min_reps=3, max_reps=20, index=info.index)
            out.append(Measurement(f"host.{direction}_{memory}", HOST_COPY_BYTES / t, "bytes/s",
                                   f"{direction.upper()} copy_ of 256 MiB {memory} host memory, median of {reps}",
                                   "", clocks))
        del host
    return out


def measure_peer(info: GpuInfo) -> list[Measurement]:
    """GPU-to-GPU copy of 256 MiB to the next device, when there is one with peer access."""
    import time

    import torch

    if torch.cuda.device_count() < 2:
        return [Measurement("host.peer", None, "bytes/s", note="one GPU: no peer copy to measure")]
    other = (info.index + 1) % torch.cuda.device_count()
    n = HOST_COPY_BYTES // 4
    src = torch.rand(n, device=f"cuda:{info.index}")
    dst = torch.empty(n, device=f"cuda:{other}")
    peer = torch.cuda.can_device_access_peer(info.index, other)
    times = []
    for i in range(8):
        torch.cuda.synchronize(info.index)
        torch.cuda.synchronize(other)
        start = time.perf_counter()
        dst.copy_(src)
        torch.cuda.synchronize(other)
        if i >= 2:  # two warm-up copies
            times.append(time.perf_counter() - start)
    return [Measurement("host.peer", HOST_COPY_BYTES / statistics.median(times), "bytes/s",
                        f"copy_ of 256 MiB cuda:{info.index} -> cuda:{other}, host-timed, median of {len(times)}",
                        "" if peer else "no peer access: the copy goes through host memory")]


L1_ITERS = 4096
L1_PROGRAMS_PER_SM = 8


def measure_l1(info: GpuInfo) -> list[Measurement]:
    """Each program re-reads an 8 KiB chunk of its own (Triton, cached loads): the L1 roof of the
    hierarchical roofline. Needs triton; ncu's l1tex__t_bytes counts the same loads."""
    import torch

    kernels = triton_kernels()
    if kernels is None:
        return [Measurement("l1.read", None, "bytes/s", note="not measured: needs triton (pip install triton)")]
    programs = (info.sms or 100) * L1_PROGRAMS_PER_SM
    x = torch.rand(programs * L1_WINDOW, device="cuda")
    out = torch.empty(programs * L1_BLOCK, device="cuda")

    def fn(i: int) -> None:
        kernels.l1[(programs,)](x, out, L1_STRIDE, ITERS=L1_ITERS, WINDOW=L1_WINDOW, BLOCK=L1_BLOCK, num_warps=4)

    t, reps, clocks = time_cuda(fn, index=info.index)
    return [Measurement("l1.read", l1_bytes(programs, L1_ITERS) / t, "bytes/s",
                        f"Triton re-read of an {L1_WINDOW * 4 // 1024} KiB chunk per program, {programs} programs x "
                        f"{L1_ITERS} passes, median of {reps}", "", clocks)]


def _gemm_case(precision: str, m: int, n: int, k: int, layout: str = "NN") -> Callable[[int], Any]:
    import torch

    dev = "cuda"
    if precision == "fp8":
        fp8 = torch.float8_e4m3fn
        a = torch.randn(m, k, device=dev).to(fp8)
        b = torch.randn(n, k, device=dev).to(fp8).t()  # column-major, as _scaled_mm wants
        sa, sb = torch.tensor(1.0, device=dev), torch.tensor(1.0, device=dev)
        return lambda i: torch._scaled_mm(a, b, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
    if precision == "int8":
        a = torch.randint(-128, 128, (m, k), device=dev, dtype=torch.int8)
        b = torch.randint(-128, 128, (k, n), device=dev, dtype=torch.int8)
        return lambda i: torch._int_mm(a, b)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "tf32": torch.float32,
             "fp32": torch.float32, "fp64": torch.float64}[precision]
    a = torch.randn(k, m, device=dev, dtype=dtype).t() if layout[0] == "T" else torch.randn(m, k, device=dev, dtype=dtype)
    b = torch.randn(n, k, device=dev, dtype=dtype).t() if layout[1] == "T" else torch.randn(k, n, device=dev, dtype=dtype)
    c = torch.empty(m, n, device=dev, dtype=dtype)
    return lambda i: torch.mm(a, b, out=c)


def measure_gemm(info: GpuInfo, key: str, precision: str, shapes=GEMM_SHAPES) -> Measurement:
    """Library GEMM peak for one precision: the best median over a few large shapes."""
    import torch

    unit = "flop/s"
    library = {"fp8": "torch._scaled_mm (e4m3, unit scales)", "int8": "torch._int_mm"}.get(
        precision, f"torch.mm ({precision}{', TF32 on' if precision == 'tf32' else ''}"
                   f"{', TF32 off' if precision == 'fp32' else ''})")
    old = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high" if precision == "tf32" else "highest")
    best: tuple[float, str, dict] | None = None
    try:
        for m, n, k, *rest in shapes:
            layout = rest[0] if rest else "NN"
            try:
                fn = _gemm_case(precision, m, n, k, layout)
                t, reps, clocks = time_cuda(fn, min_reps=8, index=info.index)
            except (RuntimeError, TypeError, AttributeError, NotImplementedError) as exc:
                if best is None:
                    return Measurement(key, None, unit, library,
                                       f"not measured: {str(exc).splitlines()[0][:160]}")
                break
            finally:
                fn = None  # free the operands before the next shape
            flops = 2.0 * m * n * k / t
            if best is None or flops > best[0]:
                best = (flops, f"{library} {m}x{n}x{k}{'' if layout == 'NN' else ' ' + layout}, best median of "
                               f"{len(shapes)} shapes/layouts, {reps} calls", clocks)
    finally:
        torch.set_float32_matmul_precision(old)
        torch.cuda.empty_cache()
    assert best is not None
    note = "a slow library path on some GPUs: far under spec is not a roof" if precision == "int8" else ""
    return Measurement(key, best[0], unit, best[1], note, best[2])


def measure_fma(info: GpuInfo, precision: str) -> Measurement:
    """CUDA-core peak: a Triton FMA loop; without triton, fp32 falls back to SGEMM (a lower bound)."""
    import torch

    key = f"simt.{precision}"
    kernels = triton_kernels()
    if kernels is None:
        if precision == "fp32":
            m = measure_gemm(info, key, "fp32", shapes=((8192, 8192, 8192),))
            m.note = "triton not installed: cuBLAS SGEMM, a lower bound for the FMA roof"
            return m
        return Measurement(key, None, "flop/s", note="not measured: needs triton (pip install triton)")
    dtype = torch.float32 if precision == "fp32" else torch.float64
    programs = (info.sms or 100) * 64
    n = programs * FMA_BLOCK
    x = torch.rand(n, device="cuda", dtype=dtype)
    y = torch.empty_like(x)
    mul, add = (float(v) for v in torch.rand(2) * 0.5 + 0.25)  # random, |mul| < 1 keeps it finite

    def fn(i: int) -> None:
        kernels.fma[(programs,)](x, y, FMA_ITERS, mul, add, BLOCK=FMA_BLOCK, num_warps=4)

    t, reps, clocks = time_cuda(fn, index=info.index)
    return Measurement(key, fma_flops(n, FMA_ITERS) / t, "flop/s",
                       f"Triton FMA loop, {programs} programs x {FMA_BLOCK}, median of {reps}", "", clocks)


def measure_launch(info: GpuInfo) -> list[Measurement]:
    """Empty-kernel GPU duration (profiler) and the event-timed cost of one launch from idle."""
    import torch

    out: list[Measurement] = []
    for _ in range(20):
        torch.cuda._sleep(0)
    torch.cuda.synchronize()
    try:
        from torch.autograd import DeviceType
        from torch.profiler import ProfilerActivity, profile

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch warns about its own event-clearing default
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(200):
                    torch.cuda._sleep(0)
                torch.cuda.synchronize()
            durations = [e.duration_ns() * 1e-9 for e in prof.profiler.kineto_results.events()
                         if e.device_type() == DeviceType.CUDA and e.duration_ns() > 0]
        if not durations:
            raise RuntimeError("the profiler recorded no kernel")
        out.append(Measurement("launch.empty_kernel", statistics.median(durations), "s",
                               f"GPU duration of an empty kernel (torch.cuda._sleep(0)), profiler, "
                               f"median of {len(durations)}"))
    except Exception as exc:  # profiler/CUPTI trouble: fall back to back-to-back launches
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(200):
            torch.cuda._sleep(0)
        end.record()
        end.synchronize()
        out.append(Measurement("launch.empty_kernel", start.elapsed_time(end) / 1e3 / 200, "s",
                               "200 back-to-back empty kernels / 200, event-timed (an upper bound)",
                               f"profiler unavailable: {str(exc).splitlines()[0][:120]}"))
    singles = []
    for _ in range(20):
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.cuda._sleep(0)
        end.record()
        end.synchronize()
        singles.append(start.elapsed_time(end) / 1e3)
    out.append(Measurement("launch.event_timed", statistics.median(singles), "s",
                           "one empty kernel from idle, between two CUDA events, median of 20",
                           "includes launch latency; not used as a roof"))
    return out


def gpu_steps(info: GpuInfo) -> list[tuple[str, Callable[[], list[Measurement]]]]:
    """The measurement steps in run order: FMA before GEMMs, so GEMM heat does not cost it."""
    cc = info.compute_capability or (0, 0)
    steps: list[tuple[str, Callable[[], list[Measurement]]]] = [
        ("launch latency", lambda: measure_launch(info)),
        ("DRAM bandwidth", lambda: measure_dram(info)),
        ("L2 bandwidth", lambda: measure_l2(info)),
        ("L1 bandwidth", lambda: measure_l1(info)),
        ("host link", lambda: measure_host_link(info)),
        ("peer GPU link", lambda: measure_peer(info)),
        ("CUDA-core fp32", lambda: [measure_fma(info, "fp32")]),
        ("CUDA-core fp64", lambda: [measure_fma(info, "fp64")]),
    ]
    gemms = [("bf16", cc >= (8, 0)), ("fp16", cc >= (7, 0)), ("fp8", cc >= (8, 9)),
             ("tf32", cc >= (8, 0)), ("int8", cc >= (7, 5)), ("fp64", cc in ((8, 0), (9, 0), (10, 0)))]
    for precision, supported in gemms:
        shapes = TF32_SHAPES if precision == "tf32" else WIDE_GEMM_SHAPES if precision in ("bf16", "fp16") else GEMM_SHAPES
        if supported:
            steps.append((f"tensor {precision}",
                          lambda p=precision, s=shapes: [measure_gemm(info, f"tensor.{p}", p, s)]))
    return steps

