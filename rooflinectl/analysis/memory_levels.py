"""Which memory level served a kernel group's bytes: DRAM, or the last-level cache (a GPU's L2,
a CPU's LLC). Pure: launches in, one level per table row out.

Without counters nothing measures where bytes came from, so the analytic tier models it:
- Where the capture recorded which tensors each op read and wrote (profile_memory: every op on
  torch.profiler's event tree, capture/run/tensor_accesses.py), an LRU model of the cache gives
  each launch's DRAM bytes (analysis/reuse_distance.py), and a group is held to the level whose
  term binds the two-level roof, as the counters decide (analysis/counter_levels.py): DRAM when
  its modelled DRAM bytes are at least DRAM roof / cache roof of the bytes its tensors span.
- Elsewhere (Inductor's and graph-replayed kernels, a trace without the records) the guess is
  from launch order and shapes. A launch is cache-resident when its footprint (its minimum
  traffic, `bytes`) fits the cache and either
  - it shares a tensor (by element count: a view may reshape it) with one of the twelve launches
    just before it (the producer; one whose shapes the trace did not record, such as the copy_
    of a cast, may have written any), and its own bytes plus half those of the launches between
    the producer and it fit the cache too (half: in a chain each tensor is counted twice, written
    by one launch and read by the next), or
  - the launch just before it is of the same group: a loop repeating on a footprint that fits.
  A group is cache-resident when such launches hold at least half of its time. Shapes cannot say
  which input of `mul(grad, saved_activation)` was just written; tensor identities can.
A group held to DRAM that really ran from cache sits above its roof (16 MB copies and muls at
102-110% of the H200's DRAM roof, issue 29); one held to the cache roof that really ran from DRAM
reads as further from its roof than it is, never above it. Where the warm-cache counters measured
a group, they decide (analysis/counter_levels.py).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from rooflinectl.analysis.counter_levels import ceilings_binding_share, dram_term_binds
from rooflinectl.analysis.reuse_distance import CLEAN_SHARE, FALL_OFF, dram_bytes_by_reuse
from rooflinectl.attribution.tensor_accesses import Accesses
from rooflinectl.attribution.transfers import copy_link
from rooflinectl.ceilings.model import Ceilings

LOOKBACK_LAUNCHES = 12  # how far back a producer of a launch's input is looked for
RESIDENT_TIME_SHARE = 0.5  # a group is cache-resident when its resident launches hold this share of its time
_SHAPE = re.compile(r"\[[\d, ]+\]")


def tensor_numels(shapes: str) -> frozenset[int]:
    """The element counts of the tensors a row's `shapes` text names, scalars and 1-element tensors
    left out: "[4, 512] x [] x [2048]" -> {2048}. Counts, not shapes: a view may reshape the tensor
    its producer wrote (an embedding writes [4096, 1024], RMSNorm reads it as [4, 1024, 1024])."""
    out = set()
    for shape in _SHAPE.findall(str(shapes)):
        numel = math.prod(int(d) for d in shape.strip("[]").split(",") if d.strip())
        if numel > 1:
            out.add(numel)
    return frozenset(out)


def resident_launches(launches: pd.DataFrame, rows: np.ndarray, capacity_bytes: float) -> np.ndarray:
    """Per launch (in launch order; rows: each launch's table row), whether its bytes were most
    likely served by the cache. Vectorised over launches: shapes are compared once per pair of rows."""
    n = len(launches)
    out = np.zeros(n, dtype=bool)
    if n == 0 or not capacity_bytes or capacity_bytes <= 0:
        return out
    nbytes = np.nan_to_num(launches["bytes"].to_numpy(dtype=float), nan=np.inf)
    fits = (nbytes > 0) & (nbytes <= capacity_bytes)
    texts = launches["shapes"].to_numpy() if "shapes" in launches.columns else np.full(n, "")
    shapes = {row: tensor_numels(texts[p]) for row, p in first_launches(rows).items()}
    out[1:] = fits[1:] & fits[:-1] & (rows[1:] == rows[:-1])  # a loop over one footprint
    width, shared = int(rows.max()) + 1, {}  # pairs of rows as one integer key; whether they share a shape
    window = nbytes.copy()  # this launch's bytes and half those of the launches between it and launch i - k
    for k in range(1, LOOKBACK_LAUNCHES + 1):
        if k >= n:
            break
        if k > 1:
            window[k - 1:] += 0.5 * nbytes[:-(k - 1)]
        keys = rows[k:].astype(np.int64) * width + rows[:-k]
        out[k:] |= fits[k:] & (window[k:] <= capacity_bytes) & _pairs_share(keys, width, shapes, shared)
    return out


def first_launches(rows: np.ndarray) -> dict[int, int]:
    """Row -> position of its first launch (without a sort: the last write of a reversed scatter wins)."""
    first = np.full(int(rows.max()) + 1, -1, dtype=np.int64)
    first[rows[::-1]] = np.arange(len(rows) - 1, -1, -1)
    return {row: int(p) for row, p in enumerate(first.tolist()) if p >= 0}


DENSE_PAIR_TABLE_ROWS = 4096  # up to this many rows, pairs are looked up in a rows x rows table (no sort)


def _pairs_share(keys: np.ndarray, width: int, shapes: dict[int, frozenset[int]], shared: dict[int, bool]) -> np.ndarray:
    """Per pair key (row a x width + row b), whether the two rows name a common tensor shape;
    each distinct pair is compared once (`shared` remembers them across calls)."""
    if width <= DENSE_PAIR_TABLE_ROWS:
        seen = np.zeros(width * width, dtype=bool)
        seen[keys] = True
        unique, inverse = np.flatnonzero(seen), None
    else:
        unique, inverse = np.unique(keys, return_inverse=True)
    for key in unique.tolist():
        if key not in shared:
            earlier = shapes[key % width]  # a launch the trace recorded no tensor shapes for may have written any
            shared[key] = bool(shapes[key // width] & earlier) or not earlier
    share = np.fromiter((shared[key] for key in unique.tolist()), dtype=bool, count=len(unique))
    if inverse is not None:
        return share[inverse.reshape(-1)]
    table = np.zeros(width * width, dtype=bool)
    table[unique] = share
    return table[keys]


def row_levels(launches: pd.DataFrame, rows: pd.Series, n_rows: int, capacity_bytes: float | None,
               cache_level: str, binding_share: float = float("nan")) -> np.ndarray:
    """The memory level of each of n_rows table rows from its launches (launch order; `rows`:
    each launch's row): where the launches' modelled DRAM bytes are known (with_modelled_dram),
    the level whose term binds the two-level roof, DRAM when they are at least binding_share of
    the bytes the tensors span, as the counters decide (analysis/counter_levels.py); elsewhere
    cache_level where resident launches hold RESIDENT_TIME_SHARE of its time; the host or peer
    link for copies over one; else "dram"."""
    levels = np.full(n_rows, "dram", dtype=object)
    if n_rows == 0 or len(launches) == 0:
        return levels
    row_of = rows.to_numpy(dtype=int)
    resident = resident_launches(launches, row_of, capacity_bytes or 0.0)
    time_s = launches["time_s"].to_numpy(dtype=float)
    total = np.bincount(row_of, weights=np.nan_to_num(time_s), minlength=n_rows)
    cached = np.bincount(row_of, weights=np.where(resident, np.nan_to_num(time_s), 0.0), minlength=n_rows)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(total > 0, cached / total, np.where(np.bincount(row_of, weights=resident.astype(float),
                                                                         minlength=n_rows) > 0, 1.0, 0.0))
    levels[share >= RESIDENT_TIME_SHARE] = cache_level
    if "modelled_dram_bytes" in launches.columns and capacity_bytes and np.isfinite(binding_share):
        dram_share = _modelled_dram_share(launches, row_of, n_rows)
        known = ~np.isnan(dram_share)
        binds = dram_term_binds(dram_share[known], np.ones(int(known.sum())), binding_share)  # shares of 1 byte
        levels[known] = np.where(binds, "dram", cache_level)
    kernels = launches["kernel"].astype(str).to_numpy()
    for row, position in first_launches(row_of).items():
        link = copy_link(kernels[position])
        if link is not None:
            levels[row] = link
    return levels


def modelled_dram_bytes(launches: pd.DataFrame, rows: pd.Series, row_bytes: np.ndarray) -> np.ndarray:
    """Per table row, its bytes times its launches' modelled DRAM share (NaN where unknown)."""
    if "modelled_dram_bytes" not in launches.columns or not len(row_bytes):
        return np.full(len(row_bytes), np.nan)
    share = _modelled_dram_share(launches.reset_index(drop=True), rows.to_numpy(dtype=int), len(row_bytes))
    return share * np.asarray(row_bytes, dtype=float)


def _modelled_dram_share(launches: pd.DataFrame, row_of: np.ndarray, n_rows: int) -> np.ndarray:
    """Per row, its launches' modelled DRAM bytes over the bytes their tensors span (NaN for a row
    with no launch of known accesses)."""
    dram = launches["modelled_dram_bytes"].to_numpy(dtype=float)
    spanned = launches["spanned_bytes"].to_numpy(dtype=float)
    known = ~np.isnan(spanned)
    dram_sum = np.bincount(row_of[known], weights=dram[known], minlength=n_rows)
    spanned_sum = np.bincount(row_of[known], weights=spanned[known], minlength=n_rows)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(spanned_sum > 0, dram_sum / spanned_sum, np.nan)


def is_in_place(op: str) -> bool:
    """An ATen op that updates its first input (`aten::add_`), not a dunder (`aten::__and__`)."""
    return op.endswith("_") and not op.endswith("__")


def with_modelled_dram(launches: pd.DataFrame, accesses: Sequence[Accesses | None], ceilings: Ceilings) -> pd.DataFrame:
    """The launches (all of them, in launch order: the cache's state runs through setup and
    steady state alike) with `modelled_dram_bytes` and `spanned_bytes` from their tensors
    (analysis/reuse_distance.py), NaN where unknown; unchanged without a cache roof or accesses."""
    level = ceilings.cache_level()
    capacity = ceilings.cache_bytes()
    if ceilings.memory_roof(level, fall_back=False) is None or not capacity or not any(a is not None for a in accesses):
        return launches
    ops = launches["op"].astype(str) if "op" in launches.columns else pd.Series([""] * len(launches))
    in_place = [is_in_place(op) for op in ops]
    gpu = level == "l2"  # CLEAN_SHARE and FALL_OFF were measured on the H200's L2 only
    dram, spanned = dram_bytes_by_reuse(accesses, launches["bytes"].to_numpy(dtype=float), capacity, in_place,
                                        CLEAN_SHARE if gpu else 1.0, FALL_OFF if gpu else 0.0)
    return launches.assign(modelled_dram_bytes=dram, spanned_bytes=spanned)


def analytic_levels(launches: pd.DataFrame, rows: pd.Series, n_rows: int, ceilings: Ceilings) -> np.ndarray:
    """row_levels against these ceilings: the cache level only where they hold a roof for it and
    know its capacity (else every row stays on DRAM or its link)."""
    level = ceilings.cache_level()
    capacity = ceilings.cache_bytes() if ceilings.memory_roof(level, fall_back=False) is not None else None
    binding = ceilings_binding_share(ceilings)
    return row_levels(launches.reset_index(drop=True), rows.reset_index(drop=True), n_rows, capacity, level, binding)


def cache_time_share(table: pd.DataFrame) -> float | None:
    """Share of kernel time held to a cache roof (l2 or cache), None for an empty table."""
    if "memory_level" not in table.columns or not len(table):
        return None
    total = float(table["time_s"].sum())
    if total <= 0:
        return None
    return float(table.loc[table["memory_level"].isin(("l2", "cache")), "time_s"].sum()) / total
