"""Finding Nsight Compute, what this ncu supports, and the command line of the counters run.

Every option we pass is looked up in `ncu --help` first: an ncu that lacks an optional one runs
without it (and the run says so); one that lacks an essential one is refused in one sentence.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from rooflinectl.atomic import write_atomic
from rooflinectl.ceilings.cache import cache_dir
from rooflinectl.errors import EnvironmentProblem

PROBE_TIMEOUT_S = 60.0
ESSENTIAL_OPTIONS = ("--metrics", "--csv", "--page", "--log-file", "--profile-from-start", "--clock-control")
MISSING_NCU = ("Nsight Compute (ncu) was not found on PATH, in $CUDA_HOME/bin or /usr/local/cuda/bin: install the "
               "CUDA toolkit's Nsight Compute, or pass --ncu PATH.")


def find_ncu(explicit: str | None = None) -> str:
    """The ncu executable: --ncu PATH, else PATH, else $CUDA_HOME/bin, else /usr/local/cuda/bin."""
    if explicit:
        if Path(explicit).is_file() and os.access(explicit, os.X_OK):
            return explicit
        found = shutil.which(explicit)
        if found:
            return found
        raise EnvironmentProblem(f"--ncu {explicit} is not an executable file: point it at Nsight Compute's ncu.")
    found = shutil.which("ncu")
    if found:
        return found
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home and (Path(home) / "bin" / "ncu").is_file():
            return str(Path(home) / "bin" / "ncu")
    raise EnvironmentProblem(MISSING_NCU)


@dataclass
class NcuInfo:
    """One ncu executable: its version and the options its --help lists."""

    path: str
    version: str = ""
    options: set[str] = field(default_factory=set)  # empty: --help said nothing we could read

    def supports(self, option: str) -> bool:
        return not self.options or option in self.options


def _output(argv: list[str], timeout_s: float) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return ""
    return (done.stdout or "") + (done.stderr or "")


def probe(path: str) -> NcuInfo:
    """`ncu --version` and `ncu --help`, read once per run."""
    version_text = _output([path, "--version"], PROBE_TIMEOUT_S)
    match = re.search(r"Version\s+([0-9][0-9.]*)", version_text)
    if not version_text.strip():
        raise EnvironmentProblem(f"{path} --version printed nothing: it does not look like a working Nsight Compute.")
    options = set(re.findall(r"(--[a-z][a-z0-9-]+)", _output([path, "--help"], PROBE_TIMEOUT_S)))
    info = NcuInfo(path, match.group(1) if match else version_text.strip().splitlines()[-1][:60], options)
    lacking = [o for o in ESSENTIAL_OPTIONS if not info.supports(o)]
    if lacking:
        raise EnvironmentProblem(f"This ncu ({info.version or path}) lacks {', '.join(lacking)}: install Nsight "
                                 "Compute 2023.1 or newer.")
    return info


def query_metrics(info: NcuInfo, device_name: str, timeout_s: float = PROBE_TIMEOUT_S) -> set[str] | None:
    """Base names of the metrics this GPU offers (`ncu --query-metrics`), None when unreadable.

    Cached per (ncu, version, device) beside the measured ceilings: the query takes seconds."""
    key = hashlib.sha256(json.dumps([info.path, info.version, device_name]).encode()).hexdigest()[:16]
    path = cache_dir() / f"ncu-metrics-{key}.json"
    try:
        cached = json.loads(path.read_text(encoding="utf-8"))
        return set(cached["metrics"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    text = _output([info.path, "--query-metrics"], timeout_s)
    names = set(re.findall(r"^([a-z0-9]+__[a-z0-9_]+)\s", text, flags=re.MULTILINE))
    if "gpu__time_duration" not in names:
        return None
    with contextlib.suppress(OSError):  # a read-only cache only costs the query next time
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps({"ncu": info.path, "version": info.version, "device": device_name,
                                       "metrics": sorted(names)}))
    return names


@dataclass
class CounterRunSpec:
    """What the counters run asks of ncu."""

    metrics: list[str]
    kernel_id: str | None  # None: every launch between cudaProfilerStart and Stop
    launch_count: int | None
    log_path: str
    report_path: str | None = None
    cache_control: str = "all"  # "none": the caches as the program left them (capture/ncu/warm.py)


def ncu_command(info: NcuInfo, spec: CounterRunSpec, child_argv: list[str]) -> tuple[list[str], list[str]]:
    """(the command line, notes on options this ncu lacks).

    --clock-control none: rooflines need the clocks the program really runs at (ncu locks them to
    base by default). --cache-control all (spec.cache_control): caches flushed before each replay
    pass, so counters do not depend on the pass order (DRAM bytes are cold-cache); "none" for the
    warm run, one pass per launch (capture/ncu/warm.py). --profile-from-start off: only launches
    between cudaProfilerStart and Stop (the counted region) are seen or numbered.
    """
    notes: list[str] = []
    cmd = [info.path, "--profile-from-start", "off", "--clock-control", "none",
           "--metrics", ",".join(spec.metrics), "--csv", "--page", "raw", "--log-file", spec.log_path]
    optional: list[tuple[str, list[str], str]] = [
        ("--cache-control", ["--cache-control", spec.cache_control],
         "caches are not flushed between replay passes" if spec.cache_control == "all" else ""),
        ("--print-units", ["--print-units", "base"], ""),
        ("--target-processes", ["--target-processes", "application-only"], ""),
        ("--rename-kernels", ["--rename-kernels", "off"], ""),
    ]
    if spec.kernel_id is not None:
        optional.append(("--kernel-id", ["--kernel-name-base", "mangled", "--kernel-id", spec.kernel_id],
                         "no --kernel-id: every launch is measured"))
    for option, args, note in optional:
        if info.supports(option) and (option != "--kernel-id" or info.supports("--kernel-name-base")):
            cmd += args
        elif note:
            notes.append(f"this ncu lacks {option}: {note}")
    if spec.launch_count is not None:
        cmd += ["--launch-count", str(spec.launch_count)]
    if spec.report_path:
        cmd += ["--export", spec.report_path, "--force-overwrite"]
    return cmd + child_argv, notes
