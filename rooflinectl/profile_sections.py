"""The profile's sections as types: run metadata, summary, and the summary's nested sections
(clocks, communication, distributed, counters).

The file stores them as JSON objects and the readers index them by name, so a key is declared
here once with its type; schema.SUMMARY_KEYS says what each summary key means (tests hold the two
to the same keys, and every key the pipeline writes to one declared here). All are total=False:
a profile from an older version, a CPU run or a failed run lacks some, and readers use .get for
those. outputs/summary_shapes.py checks the shapes of the nested values when a file is loaded.

The run metadata of a finished run is stamped by `finished_metadata`, the one place that writes
the tool's own keys (what ran, when, against which ceilings), for a profiled program as for
the reference kernels.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, TypedDict

from rooflinectl._version import __version__
from rooflinectl.ceilings.model import Ceilings
from rooflinectl.schema import TOOL_NAME


class Stats(TypedDict, total=False):
    mean: float
    min: float
    max: float


class RoofShift(TypedDict, total=False):
    roof: str
    roof_clock_mhz: float
    kernel_clock_mhz: float
    peak_change: float
    peak_at_kernel_clock_flops_per_s: float
    attainable_change: float
    notable: bool


class OtherProcesses(TypedDict, total=False):
    count: int
    used_bytes: float
    sm_util_max_pct: float


class Clocks(TypedDict, total=False):
    """summary["clocks"]: NVML while the counted kernels ran (analysis/clocks.py clock_summary)."""

    status: str  # sampled, unavailable, off, unaligned, not_sampled
    message: str
    samples: int
    period_s: float
    device_index: int | None
    max_sm_clock_mhz: float | None
    max_mem_clock_mhz: float | None
    power_limit_w: float | None
    other_processes: OtherProcesses
    span_ns: list[float]
    sm_clock_mhz: Stats
    clocked_kernel_time_share: float | None
    mem_clock_mhz: Stats | None
    power_w: Stats | None
    temperature_c_max: float | None
    gpu_util_pct_mean: float | None
    kernel_time_s: float
    throttle_kernel_s: dict[str, float]
    roof_shifts: list[RoofShift]
    capped_kernel_s: float
    cap_cost_s: float
    cap_cost_by_row: list[list[float]]


class Communication(TypedDict, total=False):
    """summary["communication"]: collectives against the other device work (analysis/communication.py)."""

    iterations: int
    launches: int
    collective_time_s: float
    bus_bytes: float | None
    busy_s: float
    overlapped_s: float
    exposed_s: float
    exposed_per_iteration_s: float
    compute_busy_s: float
    collective_fields: list[str]
    collectives: list[list[Any]]  # one per launch, fields as collective_fields


class Distributed(TypedDict, total=False):
    """summary["distributed"]: a job's rank profiles read together (analysis/ranks.py merge_ranks)."""

    world_size: int
    ranks_found: list[int]
    missing_ranks: list[int]
    files: dict[str, str]
    ranks: list[dict[str, Any]]
    straggler: dict[str, Any] | None
    collectives: list[dict[str, Any]]
    step_time_s: float | None
    steps: int


class Counters(TypedDict, total=False):
    """summary["counters"]: what the counters tier did (pipeline.add_counters; cli/profile_counters.py
    for a skipped or failed run: status and reason only)."""

    status: str  # measured, skipped, failed
    reason: str
    exit_code: int
    tool: str
    ncu_version: str
    ncu_path: str
    command: list[str]
    metrics: list[str]
    metrics_missing: list[str]
    samples: int
    launch_count: int | None
    launch_skip: int
    launches_expected: int
    selection: str
    cache_control: str
    warm: dict[str, Any]  # the warm-cache run (capture/ncu/warm.py): status, reason, wall time
    rows_warm: int  # groups whose memory level the warm counters decided (analysis/counter_levels.py)
    rows_cache_counters: int
    rows_cache_analytic: int
    rows_warm_beyond_peak: int  # groups whose warm figure DRAM could not have moved in their time: analytic level kept
    clock_control: str
    wall_s: float
    ncu_warnings: Any
    counted_part: str
    launches_counted: int
    launches_measured: int
    launches_in_window: int
    setup_launches_measured: int
    rows_measured: int
    rows_shared: int
    rows: int
    classes: int
    classes_measured: int
    time_share_measured: float | None
    numbering_rule: str
    unmatched: Any
    notes: list[str]


class Summary(TypedDict, total=False):
    """A profile's whole-run figures; schema.SUMMARY_KEYS says what each means."""

    total_kernel_time_s: float
    known_cost_time_share: float
    unknown_time_share: float
    window_s: float | None
    device_busy_s: float | None
    device_idle_s: float | None
    device_idle_unprofiled_s: float | None
    device_idle_unprofiled_source: str
    host_events: int
    compile_work_s: float
    regions: list[str]
    region_runs: int
    launches: int
    short_launches: int
    cache_time_share: float | None
    above_roof_rows: int
    launch_sequence: list[int]
    back_to_back_runs: list[dict[str, Any]] | None
    iterations: int
    iterations_method: str
    iterations_marker: str | None
    iterations_found: int | None
    warmup_iterations: int
    iteration_time_s: float | None
    iteration_times_s: list[float]
    profile_steps: int | None
    unprofiled_tail_s: float | None
    loop_kernel_share: float
    loop_minority: str
    profile_steps_rule: str
    profile_steps_stopped: bool
    profile_steps_marker: str | None
    profile_steps_marker_name: str | None
    profile_steps_error: str
    profile_steps_seen: int | None
    unprofiled_timed_by: str | None
    unprofiled_steps: int
    unprofiled_step_time_s: float | None
    unprofiled_step_times_s: list[float]
    setup_kernel_time_s: float
    setup_launches: int
    setup_transfer_time_s: float
    setup_transfer_bytes: float
    compile_s: float | None
    run_wall_s: float | None
    setup_wall_s: float | None
    host_sync_calls: int
    host_sync_s: float
    host_sync_idle_s: float
    host_sync_ops: list[list[Any]]
    host_outside_ops_s: float
    distributed: Distributed
    communication: Communication | None
    clocks: Clocks | None
    counters: Counters


class RunMetadata(TypedDict, total=False):
    """A profile's metadata: the run's environment (capture/run/session.py run_metadata), what capture
    learned of the run, and the tool's stamp (finished_metadata)."""

    # the environment: the roof a GEMM is held to follows the math mode it ran in
    device_kind: str
    device_name: str
    device_index: int
    python: str
    torch: str
    cuda: str | None
    triton: str | None
    platform: str
    float32_matmul_precision: str
    allow_tf32_matmul: bool
    allow_tf32_cudnn: bool
    cpu_threads: int
    # what capture learned
    rank: int  # -1 on a profile merged across ranks
    world_size: int
    local_rank: int
    local_world_size: int
    node_rank: int
    host: str
    pid: int
    merged_ranks: list[int]
    distributed: dict[str, Any]  # backend, process groups (the trace's)
    nvml: dict[str, Any]  # capture/run/nvml_sampler.py
    iterations: int  # function mode: the calls profiled
    unprofiled_calls: dict[str, Any]
    profile_steps: dict[str, Any]  # capture/run/step_limit.py
    profiler_overhead_per_op_s: float
    user_profiler_exports: list[str]
    threads_started: int
    processes_started: int
    source_file: str  # `analyse`: the trace or capture file the profile was made from
    source_lines: dict[str, Any]  # capture/run/source_lines.py: status, why, root, the interned locations
    # the tool's stamp
    tool: str
    tool_version: str
    command: list[str]
    completed: bool
    exit_code: int | None
    created: str
    ceilings_source: list[str]
    iterations_mode: str
    reference_kernels: dict[str, Any]  # `rooflinectl kernels`: size, interpreted, kernels run


def finished_metadata(environment: dict[str, Any], ceilings: Ceilings, *, command: list[str], completed: bool,
                      exit_code: int | None, **extra: Any) -> RunMetadata:
    """The run's metadata with the tool's stamp: what ran (command, completed, exit code), when,
    with which version, against ceilings of which sources; the device's name from the ceilings
    where the run did not record one (a CPU's comes from ceilings detection). `extra` adds keys
    of RunMetadata (iterations_mode, reference_kernels)."""
    metadata: dict[str, Any] = dict(environment)
    metadata.setdefault("device_name", ceilings.device_name)
    metadata.update({
        "tool": TOOL_NAME,
        "tool_version": __version__,
        "command": command,
        "completed": completed,
        "exit_code": exit_code,
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "ceilings_source": sorted({r.source for r in [*ceilings.memory_bytes_per_s.values(),
                                                     *ceilings.compute_flops_per_s.values()]}),
        **extra,
    })
    return metadata  # type: ignore[return-value]  # the environment's keys are RunMetadata's
