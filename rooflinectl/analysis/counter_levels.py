"""The memory level the counters say, and how often the analytic guess agreed with it.

Pure functions, DataFrame in, DataFrame out. The warm-cache run (capture/ncu/warm.py) measures a
group's DRAM bytes with the caches as the program left them (`dram_bytes_warm`). Every byte a
kernel moves passes the L2 and only some of them come from DRAM, so a measured group has two
memory floors, and its roof is the slower of them (a hierarchical roofline):

    memory time = max(bytes / L2 roof, min(bytes, warm DRAM bytes) / DRAM roof)

`bytes` is the table's count (the model's minimum traffic), so a model that over-counts bytes
still puts its row above the L2 term and is flagged (`suspect` bytes). The level a group is held
to is the term that binds: DRAM when its warm DRAM bytes are at least DRAM roof / L2 roof of its
bytes (0.55 on the H200: 4.67 of 8.55 TB/s), else L2. No threshold is chosen: the roofs set it,
and a group near it has nearly the same roof either way. A group without a warm figure keeps the
analytic guess (analysis/memory_levels.py), held to one roof.

The warm figure comes from another run of the program (under ncu, each launch serialised), so
its caches may differ from the profiled run's. Where the profiled run's time is shorter than DRAM
could have moved the warm figure in at its peak (the larger of the spec sheet's and the measured
roof: `warm_beyond_peak`), the figure does not describe this run, and the row keeps the analytic
guess (counted in summary["counters"]["rows_warm_beyond_peak"]). On the H200 (2026-12-02) a
ResNet-50 in-place ReLU of 25.7 MB ran at 5.0 TB/s while its warm figure (57 MB a launch, more
than its 51 MB of bytes) held it to DRAM: 107% of the 4.68 TB/s roof.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from rooflinectl.ceilings.model import Ceilings

DECIDED_LEVELS = ("dram", "l2", "cache")  # levels the counters may replace (not a copy's host or peer link)


def dram_binding_share(dram_bytes_per_s: float, cache_bytes_per_s: float) -> float:
    """The share of a group's bytes that must come from DRAM for DRAM's time to bind: DRAM roof /
    cache roof (NaN when either roof is unknown)."""
    if not (dram_bytes_per_s > 0 and cache_bytes_per_s > 0):
        return float("nan")
    return float(dram_bytes_per_s) / float(cache_bytes_per_s)


def ceilings_binding_share(ceilings: Ceilings) -> float:
    """dram_binding_share of these ceilings' DRAM roof and cache roof (NaN without a cache roof)."""
    cache = ceilings.memory_roof(ceilings.cache_level(), fall_back=False)
    dram = ceilings.memory_roof("dram", fall_back=True)
    return dram_binding_share(dram.value, cache.value) if cache is not None and dram is not None else float("nan")


def dram_term_binds(dram_bytes: np.ndarray, nbytes: np.ndarray, binding_share: float) -> np.ndarray:
    """Per row, whether DRAM's term binds the two-level roof: its DRAM bytes (capped at its
    bytes) are at least binding_share of its bytes. The one rule for measured (warm counters) and
    modelled (analysis/memory_levels.py) DRAM bytes."""
    return np.fmin(nbytes, dram_bytes) >= binding_share * nbytes


def dram_peak_bytes_per_s(ceilings: Ceilings) -> float:
    """The most DRAM can move per second: the larger of the spec sheet's figure and the measured
    roof (NaN when neither is known)."""
    spec = (ceilings.details.get("spec_roofs") or {}).get("dram") or {}
    roof = ceilings.memory_roof("dram", fall_back=False)
    values = [v for v in (spec.get("value"), roof.value if roof is not None else None)
              if isinstance(v, (int, float)) and v > 0]
    return float(max(values)) if values else float("nan")


def warm_beyond_peak(table: pd.DataFrame, dram_peak_bytes_per_s: float) -> np.ndarray:
    """Per row, whether its warm DRAM bytes (capped at its bytes, as the roof takes them) are more
    than DRAM could move at its peak in the row's measured time: the warm run's caches were not
    the profiled run's (module docstring). False where anything is unknown."""
    warm = np.fmin(_column(table, "dram_bytes_warm"), _column(table, "bytes"))
    with np.errstate(invalid="ignore"):
        return np.nan_to_num(warm > dram_peak_bytes_per_s * _column(table, "time_s"), nan=0.0).astype(bool)


def counters_levels(table: pd.DataFrame, cache_level: str, binding_share: float,
                    dram_peak_bytes_per_s: float = float("nan")) -> pd.Series:
    """Per row, the level whose term binds the two-level roof (cache_level or "dram"), '' where
    there is no warm figure, no bytes to compare it with, the row is a copy over a link, or its
    warm figure is beyond DRAM's peak in the row's time (warm_beyond_peak). binding_share:
    dram_binding_share of the ceilings."""
    warm = _column(table, "dram_bytes_warm")
    nbytes = _column(table, "bytes")
    level = np.where(dram_term_binds(warm, nbytes, binding_share), "dram", cache_level).astype(object)
    known = ~np.isnan(warm) & (nbytes > 0) & np.isfinite(binding_share) & ~warm_beyond_peak(table, dram_peak_bytes_per_s)
    if "memory_level" in table.columns:
        known &= table["memory_level"].isin(DECIDED_LEVELS).to_numpy()
    level[~known] = ""
    return pd.Series(level, index=table.index, dtype=object)


def with_counters_levels(table: pd.DataFrame, cache_level: str, binding_share: float,
                         dram_peak_bytes_per_s: float = float("nan")) -> pd.DataFrame:
    """The table with `memory_level` from the counters where they decide (`memory_level_source`
    counters), the analytic guess kept in `memory_level_analytic` for every row."""
    out = table.copy()
    analytic = out["memory_level"] if "memory_level" in out.columns else pd.Series("dram", index=out.index)
    if "memory_level_source" in out.columns and "memory_level_analytic" in out.columns:
        redone = out["memory_level_source"] == "counters"  # placed before: its analytic guess is kept aside
        analytic = analytic.where(~redone, out["memory_level_analytic"])
    out["memory_level_analytic"] = analytic.fillna("dram").replace("", "dram")
    out["memory_level"] = out["memory_level_analytic"]
    levels = counters_levels(out, cache_level, binding_share, dram_peak_bytes_per_s)
    decided = levels != ""
    out.loc[decided, "memory_level"] = levels[decided]
    out["memory_level_source"] = np.where(decided, "counters", "analytic")
    return out


def with_ceilings_levels(table: pd.DataFrame, ceilings: Ceilings) -> pd.DataFrame:
    """with_counters_levels with the rule's inputs taken from these ceilings: the cache level, the
    binding share and DRAM's peak (the one place that reads them, for the pipeline and for
    recorded runs decided again)."""
    return with_counters_levels(table, ceilings.cache_level(), ceilings_binding_share(ceilings),
                                dram_peak_bytes_per_s(ceilings))


def level_agreement(table: pd.DataFrame) -> dict[str, float | int | None]:
    """Over memory-bound groups whose level the counters decided: the share of their time where
    the analytic guess names the same level, the share of all memory-bound time they cover, and
    how many groups each says are cache-served."""
    if "memory_level_source" not in table.columns or not len(table):
        return {"level_agree_time_share": None, "level_compared_time_share": None, "level_groups": 0,
                "cache_groups_counters": 0, "cache_groups_analytic": 0}
    costed = ~table["cost_source"].isin(["none", "ncu"]) if "cost_source" in table.columns else True
    memory = table[(table["bound"] == "memory") & costed]  # rows the analytic tier costed, so could place
    decided = memory[memory["memory_level_source"] == "counters"]
    time_s = decided["time_s"].astype(float)
    same = decided["memory_level"] == decided["memory_level_analytic"]
    compared_s, memory_s = float(time_s.sum()), float(memory["time_s"].astype(float).sum())
    cached = ("l2", "cache")
    return {
        "level_agree_time_share": float(time_s[same].sum()) / compared_s if compared_s > 0 else None,
        "level_compared_time_share": compared_s / memory_s if memory_s > 0 else None,
        "level_groups": int(len(decided)),
        "cache_groups_counters": int(decided["memory_level"].isin(cached).sum()),
        "cache_groups_analytic": int(decided["memory_level_analytic"].isin(cached).sum()),
    }


def level_summary(table: pd.DataFrame, dram_peak_bytes_per_s: float = float("nan")) -> dict[str, int]:
    """For summary["counters"]: groups with a warm figure, of those how many each tier holds to
    the cache, and the groups whose warm figure was beyond DRAM's peak in their time."""
    if "memory_level_source" not in table.columns:
        return {"rows_warm": 0, "rows_cache_counters": 0, "rows_cache_analytic": 0, "rows_warm_beyond_peak": 0}
    decided = table[table["memory_level_source"] == "counters"]
    cached = ("l2", "cache")
    return {"rows_warm": int(decided.shape[0]),
            "rows_cache_counters": int(decided["memory_level"].isin(cached).sum()),
            "rows_cache_analytic": int(decided["memory_level_analytic"].isin(cached).sum()),
            "rows_warm_beyond_peak": int(warm_beyond_peak(table, dram_peak_bytes_per_s).sum())}


def _column(table: pd.DataFrame, name: str) -> np.ndarray:
    if name not in table.columns:
        return np.full(len(table), np.nan)
    return pd.to_numeric(table[name], errors="coerce").to_numpy(dtype=float)
