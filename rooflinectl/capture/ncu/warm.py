"""The warm-cache counters run: DRAM bytes with the caches as the program left them.

The counters run (--cache-control all) flushes the caches before each replay pass, so a 16 MB
tensor just written by the previous kernel, which really comes from the H200's 60 MB L2, shows
DRAM bytes equal to the minimum traffic (issue 29). A second ncu run over the same program reads
only DRAM read and write bytes with `--cache-control none`, on its own launch selection: one
launch of every row (capture/ncu/sampling.warm_class), not one per sampling class, since a
launch's warm figure depends on what ran before it.

One pass, or it is not warm: in kernel replay ncu saves the memory a kernel can reach before the
first pass and restores it before each later one, and without flushing a later pass sees the
caches the earlier ones left; when one pass is enough it neither saves nor restores (Nsight
Compute's Kernel Profiling Guide, "Kernel Replay"), so the launch runs once, after the kernels the
program launched before it. The warm run therefore asks only for the two DRAM byte counters (one
hardware unit), and reads ncu's `- N passes` per measured launch: a launch ncu replayed is not
warm, and its figure is dropped (NaN).

DRAM writes during a warm launch are the write-backs it caused: lines it evicted, its own or
those earlier kernels left dirty in L2. Over a steady state that is the kernel's share of DRAM
write traffic, not the bytes it wrote.

Cost: the program runs once more under ncu, and each sampled launch runs once (the cold run
replays it over several passes): about one more run of the program plus ncu's overhead per
measured launch. `--no-ncu-warm` skips it (the memory level then stays the analytic guess).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from rooflinectl.capture.ncu.command import CounterRunSpec, NcuInfo, ncu_command
from rooflinectl.capture.ncu.metrics import DRAM_METRICS, MeasuredLaunch
from rooflinectl.capture.ncu.run import run_ncu
from rooflinectl.errors import CountersProblem, RooflineError

WARM_METRICS: tuple[str, ...] = DRAM_METRICS  # dram__bytes_read.sum, dram__bytes_write.sum: one pass on sm_90
T = TypeVar("T")
_PASSES = re.compile(r'==PROF== Profiling "[^"\n]*"[^\n]*?-\s*(\d+)\s+pass(?:es)?\b')


def launch_passes(log_text: str) -> list[int]:
    """Replay passes per measured launch, in measuring order, from ncu's progress lines
    ('==PROF== Profiling "k" - 0: 0%....50%....100% - 1 pass')."""
    return [int(n) for n in _PASSES.findall(log_text)]


def warm_spec(cold: CounterRunSpec, log_path: Path) -> CounterRunSpec:
    """`cold` (the caller gives it the warm launch selection) with the warm metrics, caches left
    alone, no report."""
    return dataclasses.replace(cold, metrics=list(WARM_METRICS), log_path=str(log_path), report_path=None,
                               cache_control="none")


def single_pass_only(measured: list[MeasuredLaunch], passes: list[int]) -> tuple[list[MeasuredLaunch], int]:
    """(the launches, with the DRAM bytes of any launch ncu replayed over several passes set to
    NaN; how many were dropped). When the progress lines do not pair with the measured launches,
    every launch is dropped if any line says more than one pass."""
    paired = len(passes) == len(measured)
    replayed = [p > 1 for p in passes] if paired else [any(p > 1 for p in passes)] * len(measured)
    out = [dataclasses.replace(m, dram_bytes=float("nan")) if bad else m for m, bad in zip(measured, replayed)]
    return out, sum(replayed)


@dataclass
class WarmRun:
    """What the warm run gave: every measured launch (NaN DRAM bytes where not warm)."""

    measured: list[MeasuredLaunch]
    wall_s: float
    command: list[str]
    passes_max: int
    replayed: int  # launches dropped: ncu needed more than one pass
    notes: list[str] = field(default_factory=list)


def run_warm(info: NcuInfo, cold: CounterRunSpec, child_argv: list[str], work: Path, *, timeout_s: float,
             env: dict[str, str] | None = None, progress: Callable[[int, str], None] | None = None) -> WarmRun:
    """Run ncu again over the child with `--cache-control none` and the DRAM counters only;
    raise a RooflineError (one sentence) when it cannot be had."""
    if info.options and "--cache-control" not in info.options:
        raise CountersProblem(f"This ncu ({info.version or info.path}) lacks --cache-control, so it flushes the caches "
                              "before every launch: no warm-cache DRAM bytes; install Nsight Compute 2020.1 or newer.")
    spec = warm_spec(cold, work / "ncu-warm.log")
    command, notes = ncu_command(info, spec, child_argv)
    (work / "command-warm.txt").write_text(" ".join(command) + "\n", encoding="utf-8")
    run = run_ncu(command, log_path=Path(spec.log_path), program_log=work / "program-warm.log",
                  status_path=_status_path(child_argv, work), timeout_s=timeout_s, env=env, progress=progress)
    passes = launch_passes(_text(Path(spec.log_path))) or launch_passes(_text(work / "program-warm.log"))
    measured, replayed = single_pass_only(run.measured, passes)
    if not passes:  # CSV mode: ncu prints no per-launch progress (seen with ncu 2025 on the H200, 2026-12-02)
        notes.append("warm run: ncu printed no pass counts (its CSV mode does not), so one pass per launch is "
                     "taken from the metric set: the two DRAM counters took 1 pass on the H200 (ncu without --csv)")
    if replayed:
        notes.append(f"warm run: ncu replayed {replayed} of {len(measured)} launches over several passes, so their "
                     "caches were not as the program left them: their warm DRAM bytes are left out")
    return WarmRun(measured, run.wall_s, command, max(passes, default=0), replayed, notes)


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _status_path(child_argv: list[str], work: Path) -> Path:
    """The status file the child writes (its --status argument)."""
    if "--status" in child_argv:
        return Path(child_argv[child_argv.index("--status") + 1])
    return work / "status.json"


def measure_warm(info: NcuInfo, cold: CounterRunSpec, child_argv: list[str], work: Path,
                 join: Callable[[list[MeasuredLaunch]], T], *, timeout_s: float,
                 env: dict[str, str] | None = None) -> tuple[T | None, dict]:
    """run_warm, its launches joined by `join` (attribution/counters.join_measurements with the
    warm plan), never raising a RooflineError: (the join or None, the record for
    summary["counters"]["warm"]). A failed warm run costs the memory level, never the cold counters."""
    try:
        run = run_warm(info, cold, child_argv, work, timeout_s=timeout_s, env=env)
        joined = join(run.measured)
    except RooflineError as exc:
        return None, {"status": "failed", "reason": str(exc)}
    return joined, {"status": "measured", "cache_control": "none", "metrics": list(WARM_METRICS),
                    "wall_s": run.wall_s, "launches_measured": len(run.measured), "passes_max": run.passes_max,
                    "launches_replayed": run.replayed, "notes": run.notes}
