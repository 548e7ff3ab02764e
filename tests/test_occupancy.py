"""Theoretical occupancy from the launch configuration, against hand values and against CUPTI's
own estimate in every kernel event of the committed H200 traces."""

from __future__ import annotations

import math

import pytest
from advice_tables import h200_ceilings
from real_traces import raw_json

from rooflinectl.analysis.occupancy import compute_capability, device_limits, occupancy
from rooflinectl.ceilings.model import Ceilings, Roof
from rooflinectl.ceilings.sm_limits import capability_of_rates, sm_limits

HOPPER = sm_limits((9, 0))


@pytest.mark.parametrize("threads, registers, shared, blocks, limiter", [
    (128, 254, 32768, 2, "registers"),  # GPT-2's cutlass_75 LM head: 8192 registers per warp, 2 warps per quarter
    (384, 168, 221420, 1, "registers"),  # an nvjet GEMM: 12 warps, one block (its 216 KiB would allow one too)
    (1024, 32, 0, 2, "warps"),  # 32 warps per block, 64 per SM
    (32, 16, 0, 32, "blocks"),  # one warp per block, 32 blocks per SM at most
    (256, 32, 76 * 1024, 2, "shared memory"),  # 77 KiB with the runtime's reserved 1 KiB: two fit in 228 KiB, not 3
])
def test_hand_values_on_hopper(threads, registers, shared, blocks, limiter):
    occ = occupancy(HOPPER, threads, registers, shared)
    assert (occ.blocks_per_sm, occ.limiter) == (blocks, limiter)
    assert occ.occupancy == pytest.approx(blocks * math.ceil(threads / 32) / 64)


def test_missing_figures_give_no_occupancy():
    assert occupancy(HOPPER, float("nan"), 32, 0) is None
    assert occupancy(HOPPER, 128, float("nan"), 0) is None


def test_cupti_estimates_agree_on_every_real_kernel():
    """torch.profiler's `est. achieved occupancy %` (CUPTI: blocks per SM of the grid, capped by
    the resident blocks) for every kernel event it estimated (it gives 0 for kernels with more
    than 48 KiB of dynamic shared memory or clusters: those are left out)."""
    compared, limiters = 0, set()
    for name in ("gpt2_train_eager", "gpt2_fwd_eager", "mlp_small", "moe_loop"):  # the smaller traces
        for e in raw_json(name)["traceEvents"]:
            args = e.get("args", {})
            if e.get("cat") != "kernel" or not args.get("est. achieved occupancy %"):
                continue
            threads = math.prod(args["block"])
            occ = occupancy(HOPPER, threads, args["registers per thread"], args["shared memory"])
            warps = min(args["blocks per SM"], occ.blocks_per_sm) * math.ceil(threads / 32)
            assert math.floor(100 * warps / 64 + 0.5) == args["est. achieved occupancy %"], (e["name"], args)
            compared += 1
            if args["blocks per SM"] >= occ.blocks_per_sm:
                limiters.add(occ.limiter)
    assert compared > 1000 and {"registers", "warps"} <= limiters


def test_compute_capability_from_detection_rates_or_name():
    detected = Ceilings(device_name="x", device_kind="cuda", details={"device": {"compute_capability": [8, 6]}})
    assert compute_capability(detected) == (8, 6)
    assert compute_capability(Ceilings(device_name="x", device_kind="cuda", details={"rates": "sm100"})) == (10, 0)
    assert compute_capability(h200_ceilings()) == (9, 0)  # "NVIDIA H200" in the spec table
    cpu = Ceilings(device_name="cpu", device_kind="cpu", memory_bytes_per_s={"dram": Roof(1e10, "spec")})
    assert device_limits(cpu) is None
    assert capability_of_rates("sm86-geforce") == (8, 6) and capability_of_rates(None) is None
