"""Checks a profile file's content on load: types and ranges, not only keys.

A profile is data from anywhere (another machine, a hand edit, a failed run, a tool of ours of
another version), and a NaN time or a zero roof shown as fact misleads more than an error. Each
check names the field: `summary.window_s is NaN: it must be a finite number >= 0`. Unknown
costs are null (NaN after loading) by contract, so flops, bytes and everything derived from them
may be missing; times, counts and roofs may not.

What the checks cannot call wrong but a reader should know (a window shorter than the device's
busy time: a profile written before windows followed the device timeline) is returned as notes.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from rooflinectl.errors import ProfileFileError
from rooflinectl.outputs.summary_shapes import METADATA_SHAPES, SUMMARY_SHAPES, section_problem
from rooflinectl.profile_model import stale_window
from rooflinectl.profile_sections import Summary
from rooflinectl.schema import BOUNDS, COST_SOURCES, COUNTER_COLUMNS, KERNEL_COLUMNS, LATER_COLUMNS

# Bounds past which a number is absurd rather than large: no run is counted in years, no device
# moves an exabyte per second. (value >= low, value <= high; None: no bound.)
MAX_SECONDS = 1e7
MAX_RATE = 1e18

# kernel-table columns: (low, high, may be missing)
COLUMN_RANGES: dict[str, tuple[float, float | None, bool]] = {
    "calls": (0.0, None, False),
    "time_s": (0.0, MAX_SECONDS, False),
    "flops": (0.0, None, True),
    "bytes": (0.0, None, True),
    "min_bytes": (0.0, None, True),
    "intensity": (0.0, math.inf, True),
    "achieved_flops_per_s": (0.0, math.inf, True),
    "achieved_bytes_per_s": (0.0, math.inf, True),
    "attainable_flops_per_s": (0.0, math.inf, True),
    "roof_time_s": (0.0, MAX_SECONDS, True),
    "efficiency": (0.0, math.inf, True),
    "efficiency_achievable": (0.0, math.inf, True),
    "headroom_s": (0.0, MAX_SECONDS, True),
    "time_share": (0.0, 1.0 + 1e-6, True),
    "blocks": (0.0, None, True),
    "threads_per_block": (0.0, None, True),
    # optional columns (counters, launch configuration, clocks): never negative where present
    "registers_per_thread": (0.0, None, True),
    "shared_bytes_per_block": (0.0, None, True),
    "sm_clock_mhz": (0.0, None, True),
    "measured_flops": (0.0, None, True),
    "dram_bytes": (0.0, None, True),
    "l2_bytes": (0.0, None, True),
    "l1_bytes": (0.0, None, True),
    "measured_launches": (0.0, None, True),
    "measured_own_launches": (0.0, None, True),
    "dram_bytes_warm": (0.0, None, True),
    "dram_bytes_modelled": (0.0, None, True),
}
COLUMN_VALUES: dict[str, tuple[str, ...]] = {"bound": BOUNDS, "cost_source": COST_SOURCES}
# Columns a profile may lack: it was written before they existed (the readers take them as unknown:
# NaN, no counters). Every other column of schema.KERNEL_COLUMNS must be there.
OPTIONAL_COLUMNS = frozenset({"min_bytes", "registers_per_thread", "shared_bytes_per_block", "sm_clock_mhz",
                              "memory_level", "efficiency_achievable", "suspect", *COUNTER_COLUMNS,
                              *LATER_COLUMNS})
REQUIRED_COLUMNS = tuple(c for c in KERNEL_COLUMNS if c not in OPTIONAL_COLUMNS)

# summary keys: (low, high); a key may be absent or null
SUMMARY_RANGES: dict[str, tuple[float, float | None]] = {
    "total_kernel_time_s": (0.0, MAX_SECONDS),
    "known_cost_time_share": (0.0, 1.0 + 1e-6),
    "unknown_time_share": (-1e-6, 1.0 + 1e-6),
    "window_s": (0.0, MAX_SECONDS),
    "device_busy_s": (0.0, MAX_SECONDS),
    "device_idle_s": (0.0, MAX_SECONDS),
    "device_idle_unprofiled_s": (0.0, MAX_SECONDS),
    "host_events": (0.0, None),
    "launches": (0.0, None),
    "cache_time_share": (0.0, 1.0 + 1e-6),
    "above_roof_rows": (0.0, None),
    "short_launches": (0.0, None),
    "iterations": (1.0, None),
    "region_runs": (0.0, None),
    "compile_work_s": (0.0, MAX_SECONDS),
    "iterations_found": (0.0, None),
    "warmup_iterations": (0.0, None),
    "iteration_time_s": (0.0, MAX_SECONDS),
    "setup_kernel_time_s": (0.0, MAX_SECONDS),
    "setup_launches": (0.0, None),
    "setup_transfer_time_s": (0.0, MAX_SECONDS),
    "setup_transfer_bytes": (0.0, None),
    "compile_s": (0.0, MAX_SECONDS),
    "run_wall_s": (0.0, MAX_SECONDS),
    "setup_wall_s": (0.0, MAX_SECONDS),
    "host_sync_calls": (0.0, None),
    "host_sync_s": (0.0, MAX_SECONDS),
    "host_sync_idle_s": (0.0, MAX_SECONDS),
    "host_outside_ops_s": (0.0, MAX_SECONDS),
}


def _show(value: Any) -> str:
    """A value as the message names it: 1e+300, -0.5, 'fast', NaN, missing."""
    if value is None:
        return "missing"
    if isinstance(value, float):
        return "NaN" if math.isnan(value) else f"{value:g}"
    return repr(value)


def _bad_number(value: Any, low: float, high: float | None, missing_ok: bool, nan_ok: bool = False) -> str | None:
    """Why value is not acceptable, or None. missing_ok: null (not applicable) is fine; nan_ok:
    NaN is fine too (after loading, a null cost is NaN)."""
    if value is None:
        return None if missing_ok else "missing"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"{_show(value)}, not a number"
    if math.isnan(value):
        return None if nan_ok else "NaN"
    if value < low or (high is not None and value > high) or (high != math.inf and math.isinf(value)):
        return _show(value)
    return None


def _must(low: float, high: float | None) -> str:
    top = "" if high is None or math.isinf(high) else f" and <= {high:g}"
    return f"it must be a finite number >= {low:g}{top}" if high != math.inf else f"it must be a number >= {low:g}"


def check_sections(raw: dict[str, Any], where: str) -> None:
    """The top-level layout: each section of the right type."""
    for key, kind in (("metadata", dict), ("summary", dict), ("ceilings", dict), ("kernels", dict)):
        if key in raw and not isinstance(raw[key], kind):
            raise ProfileFileError(f"{where}: {key} is a {type(raw[key]).__name__}; it must be an object.")
    for key in ("ceilings", "kernels"):
        if key not in raw:
            raise ProfileFileError(f"{where} is a damaged rooflinectl profile (no {key}).")
    check_table(raw["kernels"], "kernels", where)
    if raw.get("setup_kernels") is not None:
        check_table(raw["setup_kernels"], "setup_kernels", where)


def check_table(table: Any, name: str, where: str) -> None:
    """A table's layout: column names, rows as long as the columns, every required column."""
    if not isinstance(table, dict):
        raise ProfileFileError(f"{where}: {name} is a {type(table).__name__}; it must be an object.")
    columns, rows = table.get("columns"), table.get("rows")
    if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns):
        raise ProfileFileError(f"{where}: {name}.columns must be a list of column names.")
    if not isinstance(rows, list) or not all(isinstance(r, list) and len(r) == len(columns) for r in rows):
        raise ProfileFileError(f"{where}: {name}.rows must be lists of {len(columns)} values (one per column).")
    missing = [c for c in REQUIRED_COLUMNS if c not in columns]
    if missing:
        label = "kernel table" if name == "kernels" else "setup table"
        raise ProfileFileError(f"{where}: the {label} has no {', '.join(missing)} column"
                               f"{'s' if len(missing) > 1 else ''}.")


def check_ceilings(raw: dict[str, Any], where: str) -> None:
    """Every roof a positive, finite, sane rate with a source; DRAM present."""
    c = raw["ceilings"]
    for key in ("device_name", "device_kind"):
        if not isinstance(c.get(key), str):
            raise ProfileFileError(f"{where}: ceilings.{key} must be a string.")
    for group in ("memory_bytes_per_s", "compute_flops_per_s", "achievable_flops_per_s"):
        roofs = c.get(group, {})
        if not isinstance(roofs, dict):
            raise ProfileFileError(f"{where}: ceilings.{group} must be an object.")
        for name, roof in roofs.items():
            field = f"ceilings.{group}.{name}"
            if not isinstance(roof, dict) or not isinstance(roof.get("source"), str):
                raise ProfileFileError(f"{where}: {field} must be an object with a value and a source.")
            problem = _bad_number(roof.get("value"), 0.0, MAX_RATE, False)
            if problem is None and roof["value"] <= 0:
                problem = _show(roof["value"])
            if problem:
                raise ProfileFileError(f"{where}: {field}.value is {problem}: a roof must be a finite rate > 0.")
    if "dram" not in c.get("memory_bytes_per_s", {}):
        raise ProfileFileError(f"{where}: ceilings.memory_bytes_per_s has no dram roof.")
    floor = c.get("kernel_floor_s")
    if floor is not None:
        value = floor.get("value") if isinstance(floor, dict) else floor
        problem = _bad_number(value, 0.0, 1.0, False)
        if problem:
            raise ProfileFileError(f"{where}: ceilings.kernel_floor_s.value is {problem}: {_must(0.0, 1.0)} (seconds).")


def check_metadata(metadata: dict[str, Any], where: str) -> None:
    """The metadata the commands read (rank, completed, NVML samples, ...) of the right types."""
    problem = section_problem(metadata, METADATA_SHAPES, "metadata")
    if problem:
        raise ProfileFileError(f"{where}: {problem}.")


def check_summary(summary: dict[str, Any], where: str) -> None:
    """Ranges of the whole-run figures, and the nested values' shapes (summary_shapes.py)."""
    for key, (low, high) in SUMMARY_RANGES.items():
        problem = _bad_number(summary.get(key), low, high, True)
        if problem:
            raise ProfileFileError(f"{where}: summary.{key} is {problem}: {_must(low, high)}.")
    problem = section_problem(summary, SUMMARY_SHAPES, "summary")
    if problem:
        raise ProfileFileError(f"{where}: {problem}.")
    sequence = summary.get("launch_sequence")
    if sequence is not None and not (isinstance(sequence, list)
                                     and all(isinstance(i, int) and not isinstance(i, bool) for i in sequence)):
        raise ProfileFileError(f"{where}: summary.launch_sequence must be a list of row numbers.")
    _check_runs(summary.get("back_to_back_runs"), where)


RUN_FIELDS = {"row": (0.0, None), "length": (1.0, None), "runs": (1.0, None), "span_s": (0.0, MAX_SECONDS),
              "busy_s": (0.0, MAX_SECONDS)}


def _check_runs(runs: Any, where: str) -> None:
    """summary.back_to_back_runs (optional: older profiles lack it): entries of numbers in range."""
    if runs is None:
        return
    if not (isinstance(runs, list) and all(isinstance(e, dict) for e in runs)):
        raise ProfileFileError(f"{where}: summary.back_to_back_runs must be a list of objects.")
    for n, entry in enumerate(runs):
        for key, (low, high) in RUN_FIELDS.items():
            problem = _bad_number(entry.get(key), low, high, False)
            if problem:
                raise ProfileFileError(f"{where}: summary.back_to_back_runs[{n}].{key} is {problem}: "
                                       f"{_must(low, high)}.")


def check_kernels(kernels: pd.DataFrame, where: str) -> None:
    """Ranges per column, vectorised; the first bad row is named (number and kernel)."""
    for column, (low, high, missing_ok) in COLUMN_RANGES.items():
        if column not in kernels.columns:
            continue
        series = kernels[column]
        values = pd.to_numeric(series, errors="coerce").to_numpy(dtype=float)
        raw = series.to_numpy(dtype=object)
        if pd.api.types.is_bool_dtype(series):
            not_numeric = np.ones(len(raw), dtype=bool)
        elif pd.api.types.is_numeric_dtype(series):
            not_numeric = np.zeros(len(raw), dtype=bool)
        else:  # mixed: strings or booleans among the numbers
            not_numeric = np.array([v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)))
                                    for v in raw], dtype=bool)
        with np.errstate(invalid="ignore"):
            bad = not_numeric | (values < low)
            if high is not None:
                bad |= values > high
            if high != math.inf:
                bad |= np.isinf(values)
            if not missing_ok:
                bad |= np.isnan(values)
        if bad.any():
            row = int(np.argmax(bad))
            value = raw[row]
            shown = "missing or NaN" if isinstance(value, float) and math.isnan(value) else _show(value)
            raise ProfileFileError(f"{where}: kernel row {row} ({str(kernels['kernel'].iloc[row])[:60]}): {column} is "
                                   f"{shown}: {_must(low, high)}"
                                   + (" (or null when unknown)." if missing_ok else "."))
    for column, allowed in COLUMN_VALUES.items():
        if column in kernels.columns:
            unknown = ~kernels[column].isin(allowed)
            if unknown.any():
                row = int(np.argmax(unknown.to_numpy()))
                raise ProfileFileError(f"{where}: kernel row {row}: {column} is {kernels[column].iloc[row]!r}; "
                                       f"it must be one of {', '.join(allowed)}.")


def consistency_notes(summary: Summary) -> list[str]:
    """Figures that cannot all be true at once, said rather than shown as fact."""
    notes = []
    if stale_window(summary):
        notes.append("the device was busy longer than the window: this profile's window was measured on the "
                     "host (rooflinectl before 2026-11-29); profile again for a window on the device timeline")
    return notes
