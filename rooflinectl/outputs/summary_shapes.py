"""The shapes of the profile's nested summary and metadata values, checked on load.

`show`, `plot`, `advise` and `validate` read these as dicts and lists (`clocks["sm_clock_mhz"]["mean"]`);
a damaged or hand-edited file (`"clocks": "x"`) must be one sentence naming the field, not an
AttributeError. A shape lists what the readers use, not every key a writer adds: unknown keys are
allowed, a key may be absent or null unless wrapped in `Needed` (the readers index it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

NUMBER, TEXT, FLAG, ANY = "number", "text", "true or false", "anything"


@dataclass(frozen=True)
class ListOf:
    item: Any


@dataclass(frozen=True)
class MapOf:
    """An object whose keys are names (throttle reasons, ranks) and whose values share one shape."""

    value: Any


@dataclass(frozen=True)
class Needed:
    """A key the readers index directly: present and not null."""

    shape: Any


STATS = {"mean": Needed(NUMBER), "min": Needed(NUMBER), "max": Needed(NUMBER)}

CLOCKS = {  # analysis/clocks.py clock_summary; read by outputs/clocks_text.py, plot*, advice/rules_clocks.py
    "status": TEXT, "message": TEXT, "samples": NUMBER, "period_s": NUMBER, "max_sm_clock_mhz": NUMBER,
    "max_mem_clock_mhz": NUMBER, "power_limit_w": NUMBER, "span_ns": ListOf(NUMBER), "sm_clock_mhz": STATS,
    "mem_clock_mhz": {"mean": Needed(NUMBER)}, "power_w": {"mean": Needed(NUMBER), "max": Needed(NUMBER)},
    "temperature_c_max": NUMBER, "kernel_time_s": NUMBER, "throttle_kernel_s": MapOf(NUMBER),
    "capped_kernel_s": NUMBER, "cap_cost_s": NUMBER, "cap_cost_by_row": ListOf(ListOf(NUMBER)),
    "other_processes": {"count": NUMBER, "used_bytes": NUMBER, "sm_util_max_pct": NUMBER},
    "roof_shifts": ListOf({"roof": Needed(TEXT), "notable": FLAG, "roof_clock_mhz": Needed(NUMBER),
                           "kernel_clock_mhz": Needed(NUMBER), "peak_change": Needed(NUMBER),
                           "attainable_change": Needed(NUMBER), "peak_at_kernel_clock_flops_per_s": Needed(NUMBER)}),
}
COMMUNICATION = {  # analysis/communication.py; read by outputs/ranks_text.py, analysis/ranks.py, advice
    "iterations": NUMBER, "launches": Needed(NUMBER), "busy_s": Needed(NUMBER), "overlapped_s": Needed(NUMBER),
    "exposed_s": Needed(NUMBER), "exposed_per_iteration_s": Needed(NUMBER), "compute_busy_s": NUMBER,
    "collective_time_s": NUMBER, "bus_bytes": NUMBER, "collective_fields": ListOf(TEXT), "collectives": ListOf(ListOf(ANY)),
}
COUNTERS = {  # pipeline.add_counters, profiling_counters.py; read by validate and plot --levels
    "status": TEXT, "reason": TEXT, "ncu_version": TEXT, "launches_measured": NUMBER, "launches_counted": NUMBER,
    "rows_measured": NUMBER, "rows": NUMBER, "time_share_measured": NUMBER, "wall_s": NUMBER, "notes": ListOf(TEXT),
}
DISTRIBUTED = {  # analysis/ranks.py merge_ranks (a job's rank profiles read together)
    "world_size": NUMBER, "missing_ranks": ListOf(NUMBER), "ranks_found": ListOf(NUMBER),
    "ranks": ListOf({"rank": Needed(NUMBER)}), "straggler": {"rank": NUMBER, "kernels": ListOf(MapOf(ANY))},
    "collectives": ListOf(MapOf(ANY)), "step_time_s": NUMBER, "steps": NUMBER,
}
SUMMARY_SHAPES: dict[str, Any] = {
    "clocks": CLOCKS, "communication": COMMUNICATION, "counters": COUNTERS, "distributed": DISTRIBUTED,
    "regions": ListOf(TEXT), "iteration_times_s": ListOf(NUMBER), "host_sync_ops": ListOf(ListOf(ANY)),
    "iterations_method": TEXT, "iterations_marker": TEXT,
    "profile_steps": NUMBER, "profile_steps_stopped": FLAG, "profile_steps_rule": TEXT, "unprofiled_tail_s": NUMBER, "loop_kernel_share": NUMBER,
    "loop_minority": TEXT, "profile_steps_marker": TEXT,
    "profile_steps_marker_name": TEXT, "profile_steps_seen": NUMBER, "profile_steps_error": TEXT, "device_idle_unprofiled_source": TEXT, "unprofiled_timed_by": TEXT,
    "unprofiled_steps": NUMBER, "unprofiled_step_time_s": NUMBER, "unprofiled_step_times_s": ListOf(NUMBER),
}
METADATA_SHAPES: dict[str, Any] = {
    "completed": FLAG, "exit_code": NUMBER, "device_kind": TEXT, "device_name": TEXT, "rank": NUMBER,
    "world_size": NUMBER, "local_rank": NUMBER, "host": TEXT,
    "device_index": NUMBER,
    "nvml": {"status": TEXT, "message": TEXT, "period_s": NUMBER, "own_pid": NUMBER,  # capture/run/nvml_sampler.py
             "devices": ListOf({"index": NUMBER, "max_sm_clock_mhz": NUMBER, "max_mem_clock_mhz": NUMBER,
                                "power_limit_w": NUMBER, "samples": MapOf(ListOf(NUMBER)),
                                "processes": ListOf(ListOf(ANY)), "process_util_max_pct": ListOf(ListOf(NUMBER))})},
}


def _kind(shape: Any) -> str:
    if isinstance(shape, str):
        return {NUMBER: "a number", TEXT: "a string", FLAG: "true or false"}.get(shape, shape)
    if isinstance(shape, ListOf):
        return "a list"
    return "an object"


def _shown(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return f"a {'list' if isinstance(value, list) else 'object'}"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def shape_problem(value: Any, shape: Any, field: str) -> str | None:
    """Why value does not have the shape (naming the field, e.g. `summary.clocks.sm_clock_mhz.mean is 'x':
    it must be a number`), or None."""
    if isinstance(shape, Needed):
        if value is None:
            return f"{field} is missing: it must be {_kind(shape.shape)}"
        return shape_problem(value, shape.shape, field)
    if value is None or shape == ANY:
        return None
    ok = {NUMBER: isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value),
          TEXT: isinstance(value, str), FLAG: isinstance(value, bool)}.get(shape) if isinstance(shape, str) else \
        isinstance(value, list) if isinstance(shape, ListOf) else isinstance(value, dict)
    if not ok:
        return f"{field} is {_shown(value)}: it must be {_kind(shape)}"
    if isinstance(shape, ListOf):
        return next((p for i, item in enumerate(value) if (p := shape_problem(item, shape.item, f"{field}[{i}]"))), None)
    if isinstance(shape, MapOf):
        return next((p for key, item in value.items() if (p := shape_problem(item, shape.value, f"{field}.{key}"))),
                    None)
    if isinstance(shape, dict):
        return next((p for key, item in shape.items() if (p := shape_problem(value.get(key), item, f"{field}.{key}"))),
                    None)
    return None


def section_problem(section: dict[str, Any], shapes: dict[str, Any], name: str) -> str | None:
    """The first key of a top-level section (summary, metadata) whose value has the wrong shape."""
    return next((p for key, shape in shapes.items() if (p := shape_problem(section.get(key), shape, f"{name}.{key}"))),
                None)
