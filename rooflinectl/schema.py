"""The kernel-table contract: column names, units in the names, and their meaning.

The profile file (see outputs/profile_file.py) stores this table; other tools and CI read it,
so a column is added here once, documented, and never renamed without a schema bump.
"""

from __future__ import annotations

SCHEMA_VERSION = 1
DEFAULT_PROFILE_PATH = "rooflinectl.profile.json"  # what `profile` writes and show/plot/advise read by default
# File-format markers: the "format" key of each kind of file we write, and the tool's name in them.
# Written here only; writers and the readers that recognise a file import them.
TOOL_NAME = "rooflinectl"  # the "tool" key of profile metadata, trace markers, pytest records
FORMAT_NAME = "rooflinectl-profile"  # a profile file's "format" key
CAPTURE_FORMAT_NAME = "rooflinectl-capture"  # a capture file's (`--save-capture`)
TRACE_MARKER_KEY = "rooflinectl"  # the key of our marker object at the head of an exported Chrome trace
CEILINGS_CACHE_FORMAT = "rooflinectl-ceilings-cache"  # a measured-ceilings cache file's
PYTEST_BASELINE_FORMAT = "rooflinectl-pytest-baseline"  # the pytest plugin's baseline file's
PYTEST_REPORT_FORMAT = "rooflinectl-pytest-report"  # the pytest plugin's report file's
# A launch shorter than this is a short launch (summary short_launches): launch latency, not the
# kernel's work, holds it; the launch rules speak for such kernels, the kernel rules skip them.
SHORT_LAUNCH_S = 5e-6

# name -> (dtype, meaning). Order is the order of the columns in files and tables.
KERNEL_COLUMNS: dict[str, tuple[str, str]] = {
    "kernel": ("str", "GPU kernel name (CPU: the aten op that did the work)"),
    "op": ("str", "the aten op (or Triton kernel) whose cost the kernel carries"),
    "op_family": ("str", "gemm, conv, attention, elementwise, reduction, norm, softmax, copy, index, loss, optimizer, "
                         "collective (communication between ranks: NCCL kernels, gloo work), other"),
    "module": ("str", "nn.Module path active at launch, '' when none"),
    "shapes": ("str", "input shapes of the op, e.g. '[64, 128] x [128, 256]'"),
    "op_args": ("str", "the op's scalar arguments that a rebuild needs and the shapes do not say, as a JSON object "
                       "with sorted keys (attribution/op_args.py); convolutions (forward and backward): stride, "
                       "padding, dilation, output_padding (one entry per spatial dimension), transposed, groups and "
                       "the input's memory_format (contiguous, channels_last or '' for another layout), the "
                       "backward's output_mask and bias_sizes too; '' for other ops, when the trace recorded no "
                       "value (no Concrete Inputs), and in profiles written before it was kept"),
    "source": ("str", "the user's source line that called the op, 'path:line' (path relative to the run's working "
                      "directory, metadata source_lines.root, when inside it); backward work: its forward op's line; "
                      "'' when none (torch.compile, --no-source, profiles written before it was kept)"),
    "source_function": ("str", "the function of that line ('step'; 'step (backward)' for backward work)"),
    "source_call": ("str", "the torch call made there, through the library function that made it when the line "
                           "called a library ('torch Linear.forward / torch.nn.functional.linear')"),
    "dtype": ("str", "dtype of the op's first floating input"),
    "device": ("str", "cuda or cpu"),
    "origin": ("str", "aten, triton, inductor, library or other: who wrote the kernel"),
    "calls": ("int", "number of launches aggregated in this row"),
    "time_s": ("float", "total kernel time of all calls, seconds"),
    "flops": ("float", "total floating-point operations (FMA = 2) of all calls"),
    "bytes": ("float", "total minimum DRAM traffic of all calls (inputs read once, outputs written once); for "
                       "collectives the bus bytes over the link: size x nccl-tests' bus factor (costs/collectives.py)"),
    "min_bytes": ("float", "the ops' minimum traffic (inputs read once, outputs written once) where `bytes` counts "
                           "what the kernels execute (composites run as several ops, pooling's int64 indices, "
                           "zero fills inside a backward op; the cost_note says so); equal to bytes otherwise"),
    "intensity": ("float", "flops / bytes, FLOP per byte"),
    "precision": ("str", "fp64, fp32, tf32, bf16, fp16, fp8, int8, int, bool: the math the roof follows"),
    "unit": ("str", "tensor (tensor cores), simt (CUDA cores / CPU vector units) or link (collectives: held "
                    "against the link roof, the all-reduce bus bandwidth ceilings --measure found between the GPUs)"),
    "achieved_flops_per_s": ("float", "flops / time_s"),
    "achieved_bytes_per_s": ("float", "bytes / time_s"),
    "attainable_flops_per_s": ("float", "min(peak[precision, unit], intensity x DRAM bandwidth)"),
    "roof_time_s": ("float", "time the work would take at the roof: max(flops/peak, bytes/bandwidth); "
                            "collectives: bus bytes / link bandwidth (NaN without a link roof)"),
    "efficiency": ("float", "roof_time_s / time_s (= achieved / attainable), against the clock-scaled peak and the "
                            "row's memory level; over 1.05 (analysis.roofline.ABOVE_ROOF) means the numbers are wrong"),
    "bound": ("str", "memory, compute, link (a collective, held against the link), latency or unknown"),
    "headroom_s": ("float", "time_s - roof_time_s: what reaching the roof would save"),
    "time_share": ("float", "time_s / total kernel time of the profile"),
    "cost_source": ("str", "where flops and bytes come from: analytic, triton, inductor, ncu (measured: the model had no formula) or none; mixed on re-aggregated rows"),
    "cost_note": ("str", "the formula used and its approximations"),
    "blocks": ("float", "median thread blocks per launch (GPU), NaN when unknown"),
    "threads_per_block": ("float", "median threads per block (GPU), NaN when unknown"),
    "registers_per_thread": ("float", "median registers per thread of the kernel (GPU trace), NaN when unknown"),
    "shared_bytes_per_block": ("float", "median shared memory per block, static + dynamic, bytes (GPU trace), NaN when unknown"),
    "above_roof": ("bool", "efficiency above 1.05: a bug in the numbers, never a success"),
    "rank": ("int", "process rank for multi-GPU runs (0 otherwise); -1 on a table merged across ranks"),
    "sm_clock_mhz": ("float", "SM clock the group's kernels ran at, MHz: time-weighted mean of the NVML samples "
                              "over their launches (compute roofs scale with it); NaN when not sampled"),
    "memory_level": ("str", "the memory level whose roof the bytes are held to: dram, l2 (GPU) or cache (CPU) for "
                            "cache-resident work (analysis/memory_levels.py: by the reuse distance of the tensors each op "
                            "read and wrote, analysis/reuse_distance.py; counters decide where measured with warm "
                            "caches), host_pinned, host_pageable or peer for copies over a link"),
    "dram_bytes_modelled": ("float", "DRAM bytes of all calls as the analytic tier models them: the row's bytes times "
                                     "its launches' modelled DRAM share (an LRU model of the cache over the tensors "
                                     "each op read and wrote, analysis/reuse_distance.py); with no counters, the row "
                                     "is held to max(bytes / cache roof, these bytes / DRAM roof); NaN where the "
                                     "capture recorded no tensors"),
    "efficiency_achievable": ("float", "like efficiency, but against the measured achievable compute peak (the "
                                       "dashed line; `ceilings --measure`) where there is one; may exceed 1"),
    "suspect": ("str", "for a row above its roof, the count that is suspect: flops (compute-bound) or bytes; '' otherwise"),
    # Counters (`profile --counters ncu`): what Nsight Compute measured, beside the analytic flops and
    # bytes above; NaN (measured_launches 0) where no launch of the group's sampling class was
    # measured. A measured launch's counters are applied to every launch of its sampling class (same
    # kernel, grid, block, shared memory, op, shapes, dtype; any module): twelve identical layers
    # share the launch measured in one of them (capture/ncu/sampling.py, attribution/counters.py).
    "measured_flops": ("float", "executed floating-point operations of all calls (ncu: tensor-core ops + CUDA-core add + mul + 2 x fma, packed half ops x2)"),
    "dram_bytes": ("float", "DRAM bytes read + written of all calls, measured with cold caches (ncu flushes them before each replay); written: the larger of ncu's DRAM writes and the bytes stored into L2 (an output still in L2 at the kernel's end reaches DRAM later)"),
    "l2_bytes": ("float", "L2 traffic of all calls, bytes (ncu lts__t_bytes)"),
    "l1_bytes": ("float", "L1/TEX traffic of all calls, bytes (ncu l1tex__t_bytes)"),
    "measured_precision": ("str", "roof key (unit.precision, e.g. tensor.bf16) of most of the measured FLOPs, '' when none"),
    "measured_launches": ("int", "launches Nsight Compute measured that the group's counters are the mean of: launches "
                                 "of its sampling class, in this group or another (0: no counters for this row)"),
    "measured_own_launches": ("int", "of measured_launches, the group's own launches; fewer: the counters were measured "
                                     "on launches of other groups of its class (same kernel, launch configuration, op, "
                                     "shapes, dtype) and shared"),
    "dram_bytes_warm": ("float", "DRAM bytes read + written of all calls with the caches as the program left them "
                                 "(a second ncu run, --cache-control none, one pass per launch: capture/ncu/warm.py); "
                                 "NaN where not measured warm"),
    "memory_level_source": ("str", "who chose memory_level: counters (the binding term of max(bytes / L2 roof, "
                                   "min(bytes, warm DRAM bytes) / DRAM roof); analysis/counter_levels.py) or analytic (analysis/memory_levels.py)"),
    "memory_level_analytic": ("str", "the analytic tier's guess of memory_level, kept beside the counters' choice "
                                     "(validate compares them); '' when no counters ran"),
}

# The vocabularies of the columns above (tests check that the pipeline produces no other value).
BOUNDS = ("memory", "compute", "link", "latency", "unknown")
OP_FAMILIES = ("gemm", "conv", "attention", "elementwise", "reduction", "norm", "softmax", "copy", "index", "loss",
               "optimizer", "collective", "other")
ORIGINS = ("aten", "triton", "inductor", "library", "other")
# "mixed": a row that sums rows of several known sources (show --by op|module, diff's matched
# groups; rooflinectl/aggregate.py). "ncu": flops and bytes measured by Nsight Compute because the
# cost model had no formula for the row (rows the model covers keep their analytic cost and carry
# the counters in the measured columns).
# "triton-args": an undeclared Triton kernel's minimum bytes from its tensor arguments, FLOPs unknown.
COST_SOURCES = ("analytic", "triton", "triton-args", "inductor", "mixed", "ncu", "none")

# Whole-run figures stored in the profile's "summary" (None where they do not apply).
SUMMARY_KEYS: dict[str, str] = {
    "total_kernel_time_s": "sum of time_s over all rows",
    "known_cost_time_share": "share of kernel time whose cost is known (cost_source != none)",
    "unknown_time_share": "1 - known_cost_time_share: time no formula covered, never counted as zero",
    "window_s": "device time of the counted work, seconds: the sum of the steady-state iteration times, the regions' spans, or the whole run",
    "device_busy_s": "union of kernel intervals on the device, seconds",
    "device_idle_s": "window_s - device_busy_s: time the device waited (launch overhead, host work)",
    "device_idle_unprofiled_s": "idle time to expect without the profiler: with --profile-steps, (unprofiled_step_time_s - device_busy_s per iteration) x iterations; else device_idle_s less host_events x the profiler's measured cost per event",
    "device_idle_unprofiled_source": "measured (--profile-steps' un-profiled steps) or calibration (the profiler's cost per event)",
    "host_events": "profiler events (ops, annotations) recorded in the window",
    "compile_work_s": "time of the work torch.compile ran while compiling and autotuning (benchmark launches), not counted",
    "regions": "names of the rooflinectl.region blocks that limited the count",
    "region_runs": "how many times those blocks ran (0 without regions)",
    "launches": "number of kernel launches counted",
    "short_launches": f"launches shorter than {SHORT_LAUNCH_S * 1e6:g} microseconds",
    "cache_time_share": "share of kernel time held to the last-level cache's roof (memory_level l2 or cache): "
                        "cache-resident work (analysis/memory_levels.py); None for an empty table",
    "above_roof_rows": "rows still above the roof they are held to (above_roof): a count is wrong there; left out of "
                       "efficiency aggregates and gates",
    "launch_sequence": "row indices (position in the kernel table) in launch order, first 100000",
    "back_to_back_runs": "runs of 4 or more back-to-back launches of one row (a side kernel such as a split-K reduction "
                         "between them does not break a run; an iteration's end does), per row and run length: "
                         "row, length, runs, span_s (summed over the runs: first kernel start to last kernel end, "
                         "the idle gaps between launches included) and busy_s (the union of their kernels' "
                         "intervals); longest total span first, at most 1000 (analysis/launch_runs.py). Absent "
                         "from profiles written before it was kept",
    "iterations": "iterations the kernel table covers: function mode's --iters, the steady-state iterations of a script, else 1",
    "iterations_method": "how the counted work was chosen: function, regions, profiler_step, optimizer_step, module_forward, compiled_call, kernel_sequence (attribution/iterations.py), none (no iteration found: the whole run) or off (--iterations none)",
    "iterations_marker": "the annotation that marked the iterations (e.g. Optimizer.step#SGD.step), or the first kernel of each repeated sequence",
    "iterations_found": "iterations found, warm-up included (None when none were looked for or found)",
    "warmup_iterations": "iterations found but set apart as warm-up (their launches are in the setup)",
    "iteration_time_s": "median device time of one steady-state iteration (last kernel end to last kernel end), seconds",
    "iteration_times_s": "device time of each steady-state iteration, in order (first 1000)",
    "profile_steps": "--profile-steps: the iterations profiled before the profiler stopped (absent with --profile-steps all, in function mode and with --counters)",
    "unprofiled_tail_s": "seconds from the last iteration boundary timed after the profiler stopped to the end of the run: work after the sampled loop, un-profiled and unseen (another loop or phase when large); None when the profiler did not stop",
    "loop_kernel_share": "share of the run's kernel time outside setup-like work (host transfers, compilation) that ran inside the iterations found, warm-up included (absent when no loop was found)",
    "loop_minority": "present when that share is under 50% (80% for an unmarked repeated kernel sequence): the method of the loop found (kernel_sequence: not taken as the loop, the whole run counted; a marked loop: kept, the rest of the work outside the table)",
    "profile_steps_rule": "auto (the default: setup and the first 5 iterations profiled, capture/run/step_limit.py) or fixed (--profile-steps N)",
    "profile_steps_stopped": "whether the profiler stopped after those N iterations (false: the run ended first, all of it profiled)",
    "profile_steps_marker": "what marked iterations live: optimizer_step (the first optimizer's steps), module_forward (calls of the first top-level module) or compiled_graph (calls of the first torch.compile'd graph that ran)",
    "profile_steps_marker_name": "the optimizer's or the top-level module's class name, or the compiled graph's (CompiledFxGraph and the start of its cache key)",
    "profile_steps_error": "why the profiler could not be stopped after N iterations (absent when it could): the run went on, still recorded",
    "profile_steps_seen": "iterations the live marker counted in the whole run",
    "unprofiled_timed_by": "cuda_events (on the current stream at each iteration boundary) or wall_clock (CPU runs)",
    "unprofiled_steps": "iterations timed after the profiler stopped: boundary to next boundary, so a run of M iterations gives M - N - 1",
    "unprofiled_step_time_s": "median of those un-profiled iteration times, seconds (None when none were timed)",
    "unprofiled_step_times_s": "each un-profiled iteration's time, in order (first 1000)",
    "setup_kernel_time_s": "kernel time outside the counted work (weight upload, initialisation, warm-up, compilation, teardown)",
    "setup_launches": "launches outside the counted work",
    "setup_transfer_time_s": "of setup_kernel_time_s, the host-device transfers (memcpy HtoD/DtoH/peer)",
    "setup_transfer_bytes": "bytes those setup transfers moved",
    "compile_s": "host time torch.compile spent compiling and autotuning (first to last compile mark, plus autotuning calls)",
    "run_wall_s": "wall time of the whole capture, first to last event, seconds",
    "setup_wall_s": "run_wall_s - window_s: wall time outside the counted work",
    "host_sync_calls": "host-blocking runtime calls (stream/device/event synchronise, synchronous memcpy) during the counted work",
    "host_sync_s": "host time spent blocked in them, seconds",
    "host_sync_idle_s": "device idle time they cost: per sync, the idle from the last kernel end before it to the first kernel start after it, at most the time the host was blocked in it, seconds",
    "host_sync_ops": "[op, count] of the ops that made them, most first (the runtime call's name when no op was open)",
    "host_outside_ops_s": "host time during the counted work inside no op on any thread (the Python interpreter between launches), seconds",
    "distributed": "only on the profile that reads a job's rank profiles together (analysis/ranks.py; show --format json): "
                   "world_size, ranks_found, missing_ranks, files, steps, step_time_s (median of ranks); ranks: per rank "
                   "step_time_s and per step compute, comm, overlapped, exposed, wait (in collectives, for other ranks) "
                   "and idle seconds; straggler {rank, how (waited for | more device work), gap_per_step_s, ...; "
                   "kernels: the groups that differ most from the other ranks}; collectives: per collective and "
                   "message, calls, time_per_call_s, transfer_per_call_s (the shortest rank's kernel), wait_per_call_s, "
                   "exposed_per_call_s, bus_bytes_per_s of the transfer, link_at_size_bytes_per_s, link_bytes_per_s, "
                   "imbalance (heaviest rank's message / mean)",
    "communication": "collectives against the other device work over the counted launches (analysis/communication.py); "
                     "None without collectives: iterations, launches, collective_time_s, bus_bytes, busy_s (union of "
                     "collective intervals), overlapped_s (other work running), exposed_s (nothing else running), "
                     "exposed_per_iteration_s, compute_busy_s, and collectives: per launch [op, shapes, dtype, bytes, "
                     "time_s, exposed_s, start_s] (first 10000, start from the first counted launch)",
    "clocks": "NVML while the counted kernels ran (GPU runs; None on CPU and older profiles): status "
              "(sampled, unavailable, off, unaligned) and message; samples, period_s; SM clock {mean (kernel-time "
              "weighted), min, max} MHz and the device's max; memory clock; power {mean, max} W and power_limit_w; "
              "temperature_c_max; throttle_kernel_s (kernel time under each clocks-event reason); capped_kernel_s "
              "and cap_cost_s (kernel time under a power or thermal cap, and what it cost compute-bound work); "
              "other_processes {count, used_bytes, sm_util_max_pct}; roof_shifts (per compute roof: its clock, "
              "the kernels' clock, peak_change, the peak at the kernels' clock, attainable_change, notable: "
              "moved more than 3%)",
    "counters": "what the counters tier did (`profile --counters`): status, tool, launches measured, sampling classes, "
                "groups (rows_shared: those whose counters came from another group's launches) and time covered, or why not",
}

# Columns added after schema_version 1 was first written: a profile without them reads with these values.
LATER_COLUMNS: dict[str, object] = {"source": "", "source_function": "", "source_call": "", "op_args": "",
                                    "dram_bytes_modelled": float("nan")}

# Columns of the counters tier, and the value a row without counters carries in each.
COUNTER_COLUMNS: dict[str, object] = {
    "measured_flops": float("nan"), "dram_bytes": float("nan"), "l2_bytes": float("nan"),
    "l1_bytes": float("nan"), "measured_precision": "", "measured_launches": 0, "measured_own_launches": 0,
    "dram_bytes_warm": float("nan"), "memory_level_source": "analytic", "memory_level_analytic": "",
}
