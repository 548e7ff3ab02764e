"""From a finished capture to the profile model: capture -> attribution -> analysis.

attribution joins each kernel to the op that launched it and asks costs (a library of FLOP and
byte formulas, keyed by op name: capture knows nothing of it) what that op's call costs, then
groups the launches into kernel rows; analysis places the rows against the ceilings and sums up
the run. Outputs (files, tables, charts, advice reports) come after this module and are never
imported here.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pandas as pd

from rooflinectl._version import __version__
from rooflinectl.analysis.clocks import clock_summary, device_samples, with_sm_clock
from rooflinectl.analysis.roofline import place_on_roofline, summarise
from rooflinectl.attribution.group import group_launches
from rooflinectl.attribution.join import LAUNCH_COLUMNS, attribute
from rooflinectl.capture.session import Capture
from rooflinectl.capture.trace import RawTrace
from rooflinectl.ceilings import current_ceilings
from rooflinectl.ceilings.model import Ceilings
from rooflinectl.profile_model import ProfileData
from rooflinectl.schema import KERNEL_COLUMNS


def analyse_trace(trace: RawTrace, device_kind: str, metadata: dict[str, Any], ceilings: Ceilings,
                  iterations: int = 1) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The kernel table (KERNEL_COLUMNS order, by time) and the summary of one trace."""
    attributed = attribute(trace, device_kind, metadata)
    samples = device_samples(metadata)
    launches = with_sm_clock(attributed.launches, samples)  # compute roofs follow the clock sampled
    table, sequence = group_launches(launches)
    if table.empty:
        table = pd.DataFrame(columns=[c for c in LAUNCH_COLUMNS if c not in ("start_ns", "end_ns", "launch_ns")] + ["calls"])
    placed = place_on_roofline(table, ceilings)
    placed["rank"] = 0
    placed = placed[list(KERNEL_COLUMNS)]
    order = placed.sort_values("time_s", ascending=False, kind="stable").index
    remap = {old: new for new, old in enumerate(order)}
    placed = placed.loc[order].reset_index(drop=True)
    sequence = [remap[i] for i in sequence]
    summary = summarise(placed, attributed.launches, attributed.window_s, sequence, iterations)
    summary["regions"] = attributed.regions
    summary["clocks"] = clock_summary(launches, samples, metadata, placed, ceilings)
    summary["host_events"] = attributed.host_events
    summary["compile_work_s"] = attributed.compile_work_s
    overhead_s = metadata.get("profiler_overhead_per_op_s")
    if overhead_s is not None:
        summary["device_idle_unprofiled_s"] = max(summary["device_idle_s"] - attributed.host_events * overhead_s, 0.0)
    return placed, summary


def profile_data(capture: Capture, *, command: list[str], completed: bool, exit_code: int | None = None,
                 ceilings: Ceilings | None = None) -> ProfileData:
    """Build the profile of a finished capture (also of a failed run: what ran is kept)."""
    ceilings = ceilings or current_ceilings(capture.device_kind)
    metadata = dict(capture.metadata)
    metadata.setdefault("device_name", ceilings.device_name)  # a CPU's name comes from ceilings detection
    metadata.update({
        "tool": "rooflinectl",
        "tool_version": __version__,
        "command": command,
        "completed": completed,
        "exit_code": exit_code,
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "ceilings_source": sorted({r.source for r in [*ceilings.memory_bytes_per_s.values(),
                                                     *ceilings.compute_flops_per_s.values()]}),
    })
    trace = capture.trace or RawTrace(ops=[], kernels=[], launch_ts_ns={})
    table, summary = analyse_trace(trace, capture.device_kind, metadata, ceilings,
                                   int(metadata.get("iterations", 1) or 1))
    return ProfileData(kernels=table, ceilings=ceilings, metadata=metadata, summary=summary)
