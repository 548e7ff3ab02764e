"""Place each kernel group against its roofs. Pure: DataFrame and Ceilings in, DataFrame out.

attainable = min(peak[unit, precision], intensity x bandwidth)
peak       = the compute roof (the clock-scaled spec peak where the spec is known: a ceiling no
             kernel can beat) at the clock the group's kernels ran at: roof x sm_clock_mhz / the
             roof's clock_mhz, where NVML sampled the run and the ceilings know their clock (the
             memory roof does not follow the SM clock); the measured achievable peak, scaled the
             same way, gives `efficiency_achievable` beside `efficiency`
roof_time  = max(flops / peak, bytes / bandwidth): the time the work needs at the roof
bandwidth  = the roof of the row's `memory_level`: DRAM's, the last-level cache's (l2 / cache) for
             cache-resident groups (analysis/memory_levels.py), or for host transfers (memcpy
             HtoD/DtoH, peer) the host link's, pinned or pageable as the copy was. A group the
             warm-cache counters measured has two: bytes / the cache's roof and min(bytes, warm
             DRAM bytes) / DRAM's, the slower binding (analysis/counter_levels.py); its
             bandwidth is bytes over that time
efficiency = roof_time / time  (the same as achieved / attainable, and defined for 0-FLOP copies)
bound      = latency  when one call's roof time is under the device's kernel floor (the work is
                      too small for any roof to matter: launch and latency dominate),
             memory   when the bytes take longer than the FLOPs at the roofs,
             compute  otherwise; unknown when the cost is not known.
A point above its roof (efficiency > ABOVE_ROOF) is flagged: it means the counts are wrong; `suspect`
names the count that bounds it (flops when compute-bound, else bytes).
Bytes known and FLOPs not (a user kernel's minimum bytes from its arguments, a custom op's inputs
and outputs): the group is held to the memory roof on its bytes (no compute time), its intensity
and attainable FLOP/s are unknown, and its efficiency is a lower bound (lower_bound_rows).

Collectives (unit "link") have no FLOPs: their roof time is bus bytes / the link roof (the
all-reduce bus bandwidth measured between the GPUs; NaN without one), their bound "link", or
"latency" when the measured link stays under half its peak at their message size
(analysis/links.py) or one call's roof time is under the kernel floor; attainable FLOP/s NaN.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from rooflinectl.analysis.links import latency_bound_size, message_bytes
from rooflinectl.analysis.memory_levels import cache_time_share
from rooflinectl.attribution.spans import union_length
from rooflinectl.attribution.transfers import memory_level
from rooflinectl.ceilings.model import Ceilings, Roof
from rooflinectl.profile_sections import Summary
from rooflinectl.schema import COUNTER_COLUMNS, SHORT_LAUNCH_S

ABOVE_ROOF = 1.05
LAUNCH_CONFIG_COLUMNS = ("registers_per_thread", "shared_bytes_per_block")


def peak_of(ceilings: Ceilings, unit: str, precision: str) -> float:
    """The compute roof of a precision on a unit, FLOP/s (inf when the device has none)."""
    roof = ceilings.compute_roof(unit, precision)
    return roof.value if roof is not None else math.inf


def clock_scale(roof: Roof | None, sm_clock_mhz: float) -> float:
    """How much a compute roof moves at a given SM clock: clock / the roof's clock (peaks are
    SMs x FLOP per clock x clock); 1 when either clock is unknown."""
    if roof is None or not roof.clock_mhz or sm_clock_mhz is None or not math.isfinite(sm_clock_mhz) \
            or sm_clock_mhz <= 0:
        return 1.0
    return float(sm_clock_mhz) / float(roof.clock_mhz)


def _peaks(table: pd.DataFrame, ceilings: Ceilings, *, achievable: bool = False) -> np.ndarray:
    """Per row, the compute roof at the row's SM clock; achievable: the measured achievable peak
    instead, where there is one (else the roof)."""
    clocks = table["sm_clock_mhz"] if "sm_clock_mhz" in table.columns else [math.nan] * len(table)
    out = []
    for u, p, c in zip(table["unit"], table["precision"], clocks):
        roof = (ceilings.achievable_roof(u, p) if achievable else None) or ceilings.compute_roof(u, p)
        out.append(roof.value * clock_scale(roof, float(c)) if roof is not None else math.inf)
    return np.array(out, dtype=float)


def _bandwidths(out: pd.DataFrame, ceilings: Ceilings) -> np.ndarray:
    """Per row, the bandwidth of its memory level. The level comes from the kernel name (DRAM, or
    a host or peer link) where the table has none; a cache level the ceilings hold no roof for
    becomes "dram" (the column says what the row was held to)."""
    named = [memory_level(k) for k in out["kernel"]]
    given = out["memory_level"] if "memory_level" in out.columns else pd.Series([""] * len(out), index=out.index)
    levels = [g if isinstance(g, str) and g else n for g, n in zip(given, named)]
    roofs = {level: ceilings.memory_roof(level, fall_back=True) for level in set(levels)}  # links: their upper bound
    levels = [level if roofs[level] is not None or level == "dram" else "dram" for level in levels]
    out["memory_level"] = levels
    values = {level: roof.value if roof is not None else math.nan for level, roof in roofs.items()}
    dram = ceilings.memory_roof("dram", fall_back=True)
    values["dram"] = dram.value if dram is not None else math.nan
    return np.array([values[level] for level in levels], dtype=float)


def _two_level_memory_s(out: pd.DataFrame, nbytes: np.ndarray, one_level_s: np.ndarray,
                        ceilings: Ceilings) -> np.ndarray:
    """The memory time at the roof: the slower of the cache's term and DRAM's term for the DRAM
    bytes (capped at the row's bytes) that the warm-cache counters saw (memory_level_source
    counters) or, elsewhere, that the analytic tier modelled (dram_bytes_modelled); one level's
    for the rest (copies over a link, rows without either)."""
    cache = ceilings.memory_roof(ceilings.cache_level(), fall_back=False)
    dram = ceilings.memory_roof("dram", fall_back=True)
    if cache is None or dram is None or "memory_level" not in out.columns:
        return one_level_s
    counted = (out["memory_level_source"] == "counters").to_numpy() if "memory_level_source" in out.columns \
        else np.zeros(len(out), dtype=bool)
    warm = _numbers(out, "dram_bytes_warm")
    dram_bytes = np.where(counted, warm, _numbers(out, "dram_bytes_modelled"))
    decided = ~np.isnan(dram_bytes) & out["memory_level"].isin(("dram", ceilings.cache_level())).to_numpy()
    two_level_s = np.fmax(nbytes / cache.value, np.fmin(nbytes, dram_bytes) / dram.value)
    return np.where(decided, two_level_s, one_level_s)


def _numbers(out: pd.DataFrame, column: str) -> np.ndarray:
    """A float column, NaN where the table lacks it."""
    if column not in out.columns:
        return np.full(len(out), np.nan)
    return pd.to_numeric(out[column], errors="coerce").to_numpy(dtype=float)


def place_on_roofline(table: pd.DataFrame, ceilings: Ceilings) -> pd.DataFrame:
    """Add intensity, achieved, attainable, roof_time_s, efficiency, bound, headroom, share (and
    sm_clock_mhz, registers_per_thread, shared_bytes_per_block as NaN where the table lacks them, the
    counter columns empty where it has no counters)."""
    out = table.copy()
    if "min_bytes" not in out.columns:
        out["min_bytes"] = out["bytes"]  # a profile written before the column: bytes were the minimum
    if "sm_clock_mhz" not in out.columns:
        out["sm_clock_mhz"] = np.nan  # not sampled: the roofs stay at their own clock
    if "dram_bytes_modelled" not in out.columns:
        out["dram_bytes_modelled"] = np.nan  # no tensors recorded: one roof per row
    for name in LAUNCH_CONFIG_COLUMNS:
        if name not in out.columns:
            out[name] = np.nan  # a CPU table, or a profile written before the trace's were kept
    for name, empty in COUNTER_COLUMNS.items():
        if name not in out.columns:
            out[name] = empty
    bandwidth = _bandwidths(out, ceilings)
    link = ceilings.link()
    on_link = (out["unit"] == "link").to_numpy(dtype=bool)
    bandwidth = np.where(on_link, link.value if link is not None else np.nan, bandwidth)
    floor_s = ceilings.kernel_floor_s.value
    peaks = _peaks(out, ceilings)
    achievable = _peaks(out, ceilings, achievable=True)
    flops = out["flops"].to_numpy(dtype=float)
    nbytes = out["bytes"].to_numpy(dtype=float)
    bytes_only = np.isnan(flops) & ~np.isnan(nbytes)
    time_s = out["time_s"].to_numpy(dtype=float)
    calls = out["calls"].to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        intensity = np.where(nbytes > 0, flops / nbytes, np.where(flops > 0, np.inf, 0.0))
        compute_s = np.where(bytes_only, 0.0, flops / peaks)
        memory_s = _two_level_memory_s(out, nbytes, nbytes / bandwidth, ceilings)
        bandwidth = np.where(memory_s > 0, nbytes / memory_s, bandwidth)
        roof_s = np.where(on_link, memory_s, np.fmax(compute_s, memory_s))  # no link roof: unknown
        out["intensity"] = intensity
        out["achieved_flops_per_s"] = flops / time_s
        out["achieved_bytes_per_s"] = nbytes / time_s
        out["attainable_flops_per_s"] = np.where(on_link | bytes_only, np.nan, np.fmin(peaks, intensity * bandwidth))
        out["roof_time_s"] = roof_s
        out["efficiency"] = roof_s / time_s
        out["efficiency_achievable"] = np.where(on_link, memory_s, np.fmax(flops / achievable, memory_s)) / time_s
        out["headroom_s"] = np.clip(time_s - roof_s, 0.0, None)
    known = (~np.isnan(flops) | bytes_only) & ~np.isnan(nbytes)
    out.loc[~known, "intensity"] = np.nan  # unknown cost is not a zero-FLOP copy
    bound = np.where(on_link, "link", np.where(memory_s >= compute_s, "memory", "compute")).astype(object)
    bound[(roof_s / np.maximum(calls, 1)) < floor_s] = "latency"
    for i in np.flatnonzero(on_link):
        if latency_bound_size(ceilings, message_bytes(out["shapes"].iloc[i], out["dtype"].iloc[i])):
            bound[i] = "latency"
    bound[~known] = "unknown"
    out["bound"] = bound
    total = float(np.nansum(time_s))
    out["time_share"] = time_s / total if total > 0 else 0.0
    out["above_roof"] = known & (out["efficiency"].to_numpy(dtype=float) > ABOVE_ROOF)
    out["suspect"] = np.where(out["above_roof"], np.where(on_link | (memory_s >= compute_s), "bytes", "flops"), "")
    return out


def lower_bound_rows(table: pd.DataFrame) -> pd.Series:
    """Rows whose efficiency is a lower bound: bytes known (a minimum), FLOPs unknown."""
    if "flops" not in table.columns or "bytes" not in table.columns:
        return pd.Series(False, index=table.index)
    return table["flops"].isna() & table["bytes"].notna()


def cost_shares(table: pd.DataFrame) -> dict[str, float | None]:
    """Share of kernel time with a known cost (any cost_source but none) and without one."""
    total = float(table["time_s"].sum()) if len(table) else 0.0
    known = float(table.loc[table["cost_source"] != "none", "time_s"].sum()) if len(table) else 0.0
    return {"known_cost_time_share": known / total if total > 0 else None,
            "unknown_time_share": 1 - known / total if total > 0 else None}


def summarise(table: pd.DataFrame, launches: pd.DataFrame, window_s: float, sequence: list[int],
              iterations: int = 1) -> Summary:
    """Whole-run figures (schema.SUMMARY_KEYS): known-cost share, device busy and idle time."""
    busy_s = union_length(launches["start_ns"].to_numpy(), launches["end_ns"].to_numpy()) / 1e9
    return {
        "total_kernel_time_s": float(table["time_s"].sum()) if len(table) else 0.0,
        **cost_shares(table),
        "window_s": window_s,
        "device_busy_s": busy_s,
        "device_idle_s": max(window_s - busy_s, 0.0),
        "launches": int(len(launches)),
        "short_launches": int((launches["time_s"] < SHORT_LAUNCH_S).sum()) if len(launches) else 0,
        "launch_sequence": sequence,
        "iterations": iterations,
        "cache_time_share": cache_time_share(table),
        "above_roof_rows": int(table["above_roof"].sum()) if "above_roof" in table.columns else 0,
    }
