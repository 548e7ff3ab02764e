"""Measure a CPU's ceilings through torch: STREAM-like copy and triad (in DRAM and in the last-level
cache), fp32/fp64 matmul, op floor.

Arrays are sized well past the last-level cache; the thread count torch uses is recorded in
each method, since a CPU roof is only true for that many threads. About 2 s in all.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

from rooflinectl.ceilings.measurement import Measurement

STREAM_BYTES_PER_ARRAY = 256 << 20  # far past any LLC; three arrays live at once
FASTEST_CALL_MARK = "the fastest of"  # in the method of a matmul roof measured the current way


def time_cpu(fn: Callable[[], Any], *, budget_s: float = 0.4, min_reps: int = 3,
             max_reps: int = 50, warmup: int = 1) -> tuple[float, int]:
    """(median seconds per call, repeats) by perf_counter around each call."""
    for _ in range(warmup):
        fn()
    times: list[float] = []
    stop = time.perf_counter() + budget_s
    while len(times) < min_reps or (len(times) < max_reps and time.perf_counter() < stop):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), len(times)


def _available_bytes() -> int | None:
    try:
        with open("/proc/meminfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def measure_stream(threads: int) -> list[Measurement]:
    """STREAM copy (b = a) and triad (a = b + s*c) on fp64 arrays; bytes as STREAM counts them."""
    import torch

    nbytes = STREAM_BYTES_PER_ARRAY
    avail = _available_bytes()
    if avail is not None:
        nbytes = max(16 << 20, min(nbytes, avail // 8))
    n = nbytes // 8
    a, b, c = (torch.rand(n, dtype=torch.float64) for _ in range(3))
    what = f"3 x {nbytes / 2**20:.0f} MiB fp64 arrays, {threads} threads"
    t, reps = time_cpu(lambda: b.copy_(a))
    out = [Measurement("dram.copy", 2 * nbytes / t, "bytes/s", f"STREAM copy, {what}, median of {reps}")]
    t, reps = time_cpu(lambda: torch.add(b, c, alpha=3.0, out=a))
    out.append(Measurement("dram.triad", 3 * nbytes / t, "bytes/s",
                           f"STREAM triad (2 reads + 1 write counted), {what}, median of {reps}"))
    return out


CACHE_SIZES_BYTES = (256 << 10, 1 << 20, 4 << 20)  # per array; three live at once; LLC/4 caps them


def measure_cache(threads: int, llc_bytes: int | None) -> list[Measurement]:
    """Copy and triad over arrays that fit the last-level cache, repeated so they stay there: the
    roof of cache-resident work. The best call counts, not the median: a roof is a ceiling, and
    on a shared machine a neighbour only ever slows a call down. Bytes as STREAM counts them."""
    import torch

    if not llc_bytes:
        return [Measurement("cache.copy", None, "bytes/s", note="last-level cache size unknown: not measured")]
    best: dict[str, tuple[float, str]] = {}
    for nbytes in [s for s in CACHE_SIZES_BYTES if 3 * s <= llc_bytes] or [llc_bytes // 8]:
        n = nbytes // 4
        a, b, c = (torch.rand(n) for _ in range(3))
        cases = (("cache.copy", lambda a=a, b=b: b.copy_(a), 2 * nbytes),
                 ("cache.triad", lambda a=a, b=b, c=c: torch.add(b, c, alpha=3.0, out=a), 3 * nbytes))
        for key, fn, moved in cases:
            t = min_time(fn, reps=200)
            if moved / t > best.get(key, (0.0, ""))[0]:
                best[key] = (moved / t, f"{nbytes >> 10} KiB fp32 arrays, {threads} threads, best of 200")
    return [Measurement(key, value, "bytes/s", f"{'STREAM copy' if key.endswith('copy') else 'STREAM triad'}, {how}")
            for key, (value, how) in best.items()]


def min_time(fn: Callable[[], Any], *, reps: int) -> float:
    """The shortest of `reps` calls after one warm-up, seconds."""
    fn()
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return max(best, 1e-9)


def matmul_shapes(call_s: Callable[[int], float]) -> list[tuple[int, int, int]]:
    """(m, k, n) problems to try: squares from 256 up, doubling until one call takes 50 ms (or
    4096), flat ones beside the larger squares, and a long-K one. Small ones count: a problem that fits the caches runs faster than a
    large one, and the roof must hold every real kernel (an mm of [64, 1024] x [1024, 256] beat a
    roof taken from 2048-squares alone on this project's 2-core machine)."""
    shapes, n = [], 256
    while True:
        shapes.append((n, n, n))
        if n >= 1024:
            shapes += [(n // 4, n, n), (n, n, n // 4)]  # flat problems: one operand stays in the caches
        if call_s(n) > 0.05 or n >= 4096:
            break
        n *= 2
    return shapes + [(256, 4096, 256)]


def measure_matmul(precision: str, threads: int) -> Measurement:
    """fp32 or fp64 matmul peak: a CPU has no spec table, so the roof is the best measured rate,
    over problem sizes (matmul_shapes) and three layouts, each its fastest call."""
    import torch

    dtype = torch.float32 if precision == "fp32" else torch.float64

    def call_s(n: int) -> float:
        x, y = torch.randn(n, n, dtype=dtype), torch.randn(n, n, dtype=dtype)
        t0 = time.perf_counter()
        torch.mm(x, y)
        return time.perf_counter() - t0

    best: tuple[float, str] = (0.0, "")
    for m, k, n in matmul_shapes(call_s):
        x, y = torch.randn(m, k, dtype=dtype), torch.randn(k, n, dtype=dtype)
        layouts = (("NN", x, y), ("NT", x, y.t().contiguous().t()), ("TN", x.t().contiguous().t(), y))
        for layout, a, b in layouts:  # the spec is unknown: the best
            t0 = time.perf_counter()
            torch.mm(a, b)
            reps = max(3, min(20, int(0.1 / max(time.perf_counter() - t0, 1e-6))))  # about 0.1 s a layout
            rate = 2.0 * m * k * n / min_time(lambda a=a, b=b: torch.mm(a, b), reps=reps)
            if rate > best[0]:
                best = (rate, f"torch.mm [{m}, {k}] x [{k}, {n}] {layout} {precision}, {threads} threads, "
                              f"{FASTEST_CALL_MARK} {reps} calls; best of NN/NT/TN over squares, flat problems and a long K")
    return Measurement(f"simt.{precision}", best[0], "flop/s", best[1])


def measure_op_floor(threads: int) -> Measurement:
    """The cost of one tiny torch op (dispatch + a 1-element kernel): the CPU's kernel floor."""
    import torch

    x = torch.zeros(1)

    def burst() -> None:
        for _ in range(1000):
            x.add_(1.0)

    t, reps = time_cpu(burst, budget_s=0.2)
    return Measurement("launch.empty_kernel", t / 1000, "s",
                       f"one 1-element add_ (dispatch included), 1000-op bursts, median of {reps}")


def stale_cpu_step_names(cached: list[Measurement]) -> set[str]:
    """The cpu_steps to measure again for a cached measurement: those whose matmul figure an
    older method made (the median call of one large square: real matmuls beat it)."""
    return {f"CPU {m.key.split('.', 1)[1]} matmul" for m in cached
            if m.key in ("simt.fp32", "simt.fp64") and m.value is not None and FASTEST_CALL_MARK not in m.method}


def cpu_steps(threads: int, llc_bytes: int | None = None) -> list[tuple[str, Callable[[], list[Measurement]]]]:
    """In order of what a roof needs most per second spent: the cache roof and the op floor take
    0.2 s each and come before the matmul sweeps (5 s and 3 s on the 2-core machine), which a
    busy first run (quickstart, just after an install) pushed past the budget: without a cache
    roof every cache-resident row was held to DRAM and shown above its roof."""
    return [
        ("CPU memory bandwidth", lambda: measure_stream(threads)),
        ("CPU cache bandwidth", lambda: measure_cache(threads, llc_bytes)),
        ("CPU op floor", lambda: [measure_op_floor(threads)]),
        ("CPU fp32 matmul", lambda: [measure_matmul("fp32", threads)]),
        ("CPU fp64 matmul", lambda: [measure_matmul("fp64", threads)]),
    ]
