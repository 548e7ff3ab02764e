"""How a kernel fills the GPU: a partial last wave of tiles or blocks, and low occupancy from its
launch configuration (registers, shared memory, block size: what the trace records)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from rooflinectl.analysis.advice.common import (
    FAR_EFFICIENCY,
    LONG_KERNEL_S,
    MATH_FAMILIES,
    MIN_SHARE,
    TARGET_EFFICIENCY,
    cell_float,
    cell_text,
    is_custom,
    sm_count,
    time_per_call_s,
    usable,
    where,
)
from rooflinectl.analysis.advice.gemm_kernels import gemm_dims, is_helper, output_tile, output_tiles
from rooflinectl.analysis.advice.registry import AdviceContext, Finding, make_finding, rule
from rooflinectl.analysis.occupancy import Occupancy, device_limits, occupancy
from rooflinectl.schema import SHORT_LAUNCH_S
from rooflinectl.units import percent, seconds

MAX_WAVES = 8  # past this many waves a partial last one costs at most 1/8 of the time
MIN_TAIL_WASTE = 0.10  # share of the kernel's slot-time the last wave leaves idle
LOW_OCCUPANCY = 0.25  # resident warps / max warps under which a memory-bound kernel hides latency badly
TARGET_OCCUPANCY = 0.5


def weighty_rows(ctx: AdviceContext, min_call_s: float) -> list[tuple[int, pd.Series]]:
    """Rows with a usable cost, at least min_call_s per call and 1% of kernel time."""
    total_s = ctx.total_kernel_time_s
    if not total_s:
        return []
    return [(int(i), row) for i, row in ctx.kernels.iterrows()
            if usable(row) and time_per_call_s(row) >= min_call_s and cell_float(row, "time_s", 0.0) / total_s >= MIN_SHARE]


def row_occupancy(ctx: AdviceContext, row: pd.Series) -> Occupancy | None:
    """The theoretical occupancy of the row's launch configuration on the profiled GPU."""
    limits = device_limits(ctx.ceilings)
    if limits is None:
        return None
    return occupancy(limits, cell_float(row, "threads_per_block"), cell_float(row, "registers_per_thread"),
                     cell_float(row, "shared_bytes_per_block"))


@dataclass(frozen=True)
class Waves:
    """Work items (output tiles, or blocks) against the slots the GPU runs at once."""

    items: int
    slots: int
    what: str  # "output tiles of 128x256" or "blocks"
    tile: tuple[int, int] | None = None

    @property
    def count(self) -> int:
        return math.ceil(self.items / self.slots)

    @property
    def last(self) -> int:
        """Items in the last wave."""
        return self.items - (self.count - 1) * self.slots

    @property
    def idle_share(self) -> float:
        """Share of the slots' time that does nothing: 1 - items / (waves x slots)."""
        return 1.0 - self.items / (self.count * self.slots)


def waves_of(ctx: AdviceContext, row: pd.Series, sms: int) -> Waves | None:
    """A GEMM's output tiles (from its kernel's tile and its M, N), or a custom kernel's blocks,
    against the SMs x resident blocks per SM; a persistent GEMM (grid below its tile count) has
    its grid. None for library kernels other than GEMMs: their grid is not the user's to change."""
    blocks = cell_float(row, "blocks")
    if not blocks or blocks != blocks:
        return None
    tile = output_tile(cell_text(row, "kernel"))
    dims = gemm_dims(cell_text(row, "op"), cell_text(row, "shapes")) if cell_text(row, "op_family") == "gemm" else None
    occ = row_occupancy(ctx, row)
    resident = occ.blocks_per_sm if occ is not None else None
    if tile is not None and dims is not None:
        tiles = output_tiles(dims, tile)
        if blocks <= sms and tiles > blocks:  # persistent: each resident block loops over tiles
            return Waves(tiles, int(blocks), f"output tiles of {tile[0]}x{tile[1]}", tile)
        if resident:
            return Waves(tiles, sms * resident, f"output tiles of {tile[0]}x{tile[1]}", tile)
        return None
    if resident and is_custom(row):  # a grid the user chose
        return Waves(int(blocks), sms * resident, "blocks")
    return None


def _batch_for_full_waves(row: pd.Series, waves: Waves) -> str:
    """A batch (M) that makes the tile count a multiple of the slots, near the profiled one."""
    dims = gemm_dims(cell_text(row, "op"), cell_text(row, "shapes"))
    if dims is None or waves.tile is None:
        return ""
    per_row_of_tiles = math.ceil(dims.n / waves.tile[1]) * dims.batch
    step = waves.slots // math.gcd(per_row_of_tiles, waves.slots)
    m_tiles = math.ceil(dims.m / waves.tile[0])
    options = []
    for tiles_m in (m_tiles // step * step, math.ceil(m_tiles / step) * step):
        m = tiles_m * waves.tile[0]
        if m > 0 and 0.5 * dims.m <= m <= 1.5 * dims.m and m != dims.m:
            options.append(f"M = {m} ({tiles_m * per_row_of_tiles // waves.slots} full waves)")
    if not options:
        return ""
    return f"With this tile, a batch of {' or '.join(dict.fromkeys(options))} rows instead of {dims.m} fills every wave. "


@rule(id="grid.wave-quantisation", title="Fill the last wave of tiles or blocks", severity="warning")
def wave_quantisation(ctx: AdviceContext) -> list[Finding]:
    """A long kernel (>= 20 us per call, >= 1% of kernel time) whose work items (a GEMM's output
    tiles, from the tile in its kernel name and its M and N; a custom kernel's blocks; a library
    kernel's grid is not the user's to change) run in a few waves
    (at most 8) over the GPU's slots (SMs x blocks resident per SM, from the launch configuration;
    a persistent GEMM's grid), the last of them partly empty: 10% or more of the slot-time idle.

    Estimate: with full waves the same items take items / slots waves instead of ceil(items /
    slots): saving = time x (1 - items / (waves x slots)), never more than headroom_s.
    """
    sms = sm_count(ctx)
    if not ctx.on_gpu or not sms:
        return []
    total_s = ctx.total_kernel_time_s
    findings = []
    for i, row in weighty_rows(ctx, LONG_KERNEL_S):
        time_s = cell_float(row, "time_s", 0.0)
        if is_helper(cell_text(row, "kernel")):
            continue
        waves = waves_of(ctx, row, sms)
        if waves is None or waves.items <= waves.slots or waves.count > MAX_WAVES or waves.idle_share < MIN_TAIL_WASTE:
            continue
        per_sm = max(1, waves.slots // sms)
        busy = math.ceil(waves.last / per_sm)
        headroom_s = cell_float(row, "headroom_s", time_s)
        saving_s = min(time_s * waves.idle_share, headroom_s)
        if saving_s <= 0:
            continue
        gemm = waves.tile is not None
        fix = (_batch_for_full_waves(row, waves) + "Or let the library balance the tail: torch.compile("
               "mode=\"max-autotune\") tries stream-K / split-K schedules; for a custom kernel, pick BLOCK_M x "
               "BLOCK_N so the tile count is a multiple of the slots.") if gemm else (
               f"Launch a multiple of {waves.slots} blocks ({sms} SMs x {per_sm} resident), or many more "
               "blocks than that (smaller BLOCK sizes, more programs), so the last wave is full or short.")
        findings.append(make_finding(
            "grid.wave-quantisation",
            evidence=(f"{where(row)} runs {waves.items} {waves.what} on {waves.slots} slots ({sms} SMs x {per_sm}): "
                      f"{waves.count} waves, the last with {waves.last} items on {busy} of {sms} SMs, so "
                      f"{percent(waves.idle_share)} of the slot-time is idle ({seconds(time_per_call_s(row), decimals=2)} "
                      f"per call, {percent(time_s / total_s)} of kernel time)."),
            recommendation=fix,
            est_saving_s=saving_s,
            rows=(int(i),),
            numbers={"items": float(waves.items), "slots": float(waves.slots), "waves": float(waves.count),
                     "last_wave_items": float(waves.last), "busy_sms_last_wave": float(busy),
                     "idle_share": waves.idle_share, "time_s": time_s},
            subject=cell_text(row, "kernel") or cell_text(row, "op"),
        ))
    return findings


def _occupancy_fix(occ: Occupancy, custom: bool) -> str:
    if occ.limiter == "registers":
        how = ("In Triton, a smaller BLOCK_SIZE (fewer elements, so fewer registers, per thread) or fewer "
               "num_warps per program; in CUDA, __launch_bounds__(threads, min_blocks) or -maxrregcount.")
    elif occ.limiter == "shared memory":
        how = ("Use less shared memory per block: smaller tiles, or fewer pipeline stages (Triton num_stages: "
               "each stage buffers a tile).")
    else:
        how = "Use larger blocks (128 to 256 threads; Triton num_warps=4..8): the SM holds at most so many blocks."
    return how if custom else how + " This is a library kernel: a different shape or dtype selects another one."


@rule(id="kernel.low-occupancy", title="Raise the occupancy of a memory-bound kernel", severity="warning")
def low_occupancy(ctx: AdviceContext) -> list[Finding]:
    """A memory- or latency-bound kernel outside GEMM / conv / attention (>= 5 us per call, >= 1% of
    kernel time, under 50% of its roof) whose launch configuration (registers per thread,
    shared memory per block, threads per block, as the trace records them) lets each SM hold
    under 25% of its warps, with enough blocks to fill every SM at that occupancy: too few bytes
    in flight to reach DRAM bandwidth.

    Estimate: achieved bandwidth grows at most in proportion to resident warps (Little's law),
    up to the roof: new time = max(time x occupancy / 0.5, roof_time_s / 0.8); saving = time -
    new time. An upper bound: more warps only help if the kernel issues independent loads.
    """
    sms = sm_count(ctx)
    if not ctx.on_gpu or not sms:
        return []
    findings = []
    for i, row in weighty_rows(ctx, SHORT_LAUNCH_S):
        time_s = cell_float(row, "time_s", 0.0)
        if cell_text(row, "op_family") in MATH_FAMILIES or cell_text(row, "bound") == "compute":
            continue
        occ = row_occupancy(ctx, row)
        eff = cell_float(row, "efficiency", 1.0)
        if occ is None or occ.occupancy >= LOW_OCCUPANCY or eff >= FAR_EFFICIENCY or occ.blocks_per_sm == 0:
            continue
        if cell_float(row, "blocks", 0.0) < sms * occ.blocks_per_sm:
            continue  # the grid, not the occupancy, leaves SMs idle (grid.small)
        new_s = max(time_s * occ.occupancy / TARGET_OCCUPANCY, cell_float(row, "roof_time_s", 0.0) / TARGET_EFFICIENCY)
        saving_s = time_s - new_s
        if saving_s <= 0:
            continue
        custom = is_custom(row)
        findings.append(make_finding(
            "kernel.low-occupancy",
            evidence=(f"{where(row)}: {cell_float(row, 'registers_per_thread', 0):.0f} registers per thread x "
                      f"{cell_float(row, 'threads_per_block', 0):.0f} threads, "
                      f"{cell_float(row, 'shared_bytes_per_block', 0):,.0f} B shared memory per block: "
                      f"{occ.blocks_per_sm} block(s), {occ.warps_per_sm} warps per SM ({percent(occ.occupancy)} "
                      f"occupancy, limited by {occ.limiter}); the kernel reaches {percent(eff)} of its "
                      f"{cell_text(row, 'bound')} roof over {seconds(time_s, decimals=2)}."),
            recommendation=_occupancy_fix(occ, custom),
            est_saving_s=saving_s,
            rows=(int(i),),
            numbers={"occupancy": occ.occupancy, "blocks_per_sm": float(occ.blocks_per_sm),
                     "warps_per_sm": float(occ.warps_per_sm), "efficiency": eff, "time_s": time_s},
            subject=cell_text(row, "kernel") or cell_text(row, "op"),
        ))
    return findings
