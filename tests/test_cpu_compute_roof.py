"""The CPU's compute roof is the best matmul rate measured (a CPU has no spec table), so it must
hold every real matmul (issue 29: roofs that no real kernel beats). Taken from the median call of
one 2048-square problem it did not: the MLP example's [64, 1024] x [1024, 256] mm ran at 116% of
it on the 2-core development machine. The MLP's mms are timed here, each its fastest call, against
a roof measured now; 10% of slack for a shared machine's noise."""

from __future__ import annotations

import time

import pytest
import torch

from rooflinectl.ceilings.measure_cpu import matmul_shapes, measure_matmul, min_time


def test_the_problems_include_small_squares_and_a_long_k() -> None:
    shapes = matmul_shapes(lambda n: 1.0 if n >= 1024 else 0.001)
    assert shapes == [(256, 256, 256), (512, 512, 512), (1024, 1024, 1024), (256, 1024, 1024), (1024, 1024, 256),
                      (256, 4096, 256)]


@pytest.mark.parametrize(("m", "k", "n"), [(64, 256, 1024), (64, 1024, 256), (384, 1536, 768)])
def test_no_mlp_matmul_beats_the_measured_fp32_roof(m: int, k: int, n: int) -> None:
    roof = measure_matmul("fp32", torch.get_num_threads()).value
    a, b = torch.randn(m, k), torch.randn(k, n)
    t0 = time.perf_counter()
    torch.mm(a, b)
    reps = max(5, min(50, int(0.2 / max(time.perf_counter() - t0, 1e-6))))
    rate = 2.0 * m * k * n / min_time(lambda: torch.mm(a, b), reps=reps)
    assert rate <= 1.10 * roof, (rate / 1e9, roof / 1e9)


def test_the_cache_roof_is_measured_before_the_matmul_sweeps() -> None:
    """The matmul sweeps take most of the budget: measured first, a busy first run (quickstart,
    just after an install) skipped the cache roof, and every cache-resident row was held to DRAM
    and shown above its roof (the MLP's add_ at 153%)."""
    from rooflinectl.ceilings.measure_cpu import cpu_steps

    names = [name for name, _ in cpu_steps(2, 32 << 20)]
    first_matmul = min(i for i, name in enumerate(names) if "matmul" in name)
    assert names.index("CPU cache bandwidth") < first_matmul
    assert names.index("CPU op floor") < first_matmul
