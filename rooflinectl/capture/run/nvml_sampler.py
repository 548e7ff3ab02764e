"""NVML sampled while the workload runs: clocks, power, temperature, utilisation, clocks-event
(throttle) reasons and the other processes on the GPU, on the profiler's clock.

A thread reads one GPU every `period_s` (20 ms by default; ROOFLINECTL_NVML_PERIOD_S sets it,
0 switches sampling off). Costs measured on the H200 (scripts/probe_nvml.py): each clock, power,
utilisation and reasons query about 1-2 us, temperature 3 us, the process list 8 us (read every
PROCESS_EVERY-th sample), so one sample costs about 10 us of a CPU, off the thread that launches
kernels (pynvml's ctypes calls release the GIL). The power limit (89 us) is read once; total
energy (3.4 ms a query) is never read.

Timestamps are time.perf_counter_ns(). When sampling starts, a profiler annotation (SYNC_NAME)
is recorded between two perf_counter readings; its place in the trace ties the two clocks, so
the stored samples carry `t_ns` on the trace's own time base (RawTrace: ns from its first
event), the one kernels' start_ns and end_ns use.

Power is what nvmlDeviceGetPowerUsage reports: on Ampere and newer GPUs a one-second average
(NVML's documentation), so short bursts are smoothed. Utilisation is NVML's share of its own
sample period in which a kernel ran, not a measure of how busy the SMs were.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from rooflinectl.capture.read.raw import RawTrace

SYNC_NAME = "rooflinectl.nvml_sync"
DEFAULT_PERIOD_S = 0.02
PERIOD_ENV = "ROOFLINECTL_NVML_PERIOD_S"
PROCESS_EVERY = 25  # the process list every 25th sample (every 0.5 s at 20 ms)
SAMPLE_FIELDS = ("sm_clock_mhz", "mem_clock_mhz", "power_mw", "temperature_c", "gpu_util_pct", "mem_util_pct",
                 "reasons")


class _CaptureLike(Protocol):
    device_kind: str
    metadata: dict[str, Any]
    trace: RawTrace | None


def period_from_env(environ: dict[str, str] | None = None) -> float | None:
    """The sampling period in seconds; None when ROOFLINECTL_NVML_PERIOD_S switches sampling off."""
    text = (environ if environ is not None else os.environ).get(PERIOD_ENV, "").strip()
    if not text:
        return DEFAULT_PERIOD_S
    try:
        value = float(text)
    except ValueError:
        return DEFAULT_PERIOD_S
    return value if value > 0 else None


def _queries(nvml: Any) -> dict[str, Callable[[Any], Any]]:
    reasons = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) \
        or nvml.nvmlDeviceGetCurrentClocksThrottleReasons  # the name before NVML 12.2
    return {
        "sm_clock_mhz": lambda h: nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_SM),
        "mem_clock_mhz": lambda h: nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_MEM),
        "power_mw": nvml.nvmlDeviceGetPowerUsage,
        "temperature_c": lambda h: nvml.nvmlDeviceGetTemperature(h, nvml.NVML_TEMPERATURE_GPU),
        "gpu_util_pct": lambda h: nvml.nvmlDeviceGetUtilizationRates(h).gpu,
        "mem_util_pct": lambda h: nvml.nvmlDeviceGetUtilizationRates(h).memory,
        "reasons": reasons,
    }


def _first_ok(*calls: Callable[[], Any]) -> Any:
    """The first call's value that does not raise, else None (NVML answers per query)."""
    for call in calls:
        try:
            return call()
        except Exception:  # noqa: BLE001 - NVMLError_NotSupported and friends: that fact stays unknown
            continue
    return None


def next_deadline_ns(deadline_ns: int, now_ns: int, period_ns: int) -> int:
    """The next sample's time: one period after the last deadline, or one period from now when
    the thread woke too late (the GIL, a busy machine), so a late sample brings no burst."""
    deadline_ns += period_ns
    return deadline_ns if deadline_ns > now_ns else now_ns + period_ns


class NvmlSampler:
    """Samples one GPU on a daemon thread between start() and stop().

    Never raises for NVML's sake: start() returns why it cannot sample (one sentence), a query
    the device does not support is recorded as None and not asked again.
    """

    def __init__(self, device_index: int = 0, uuid: str | None = None, period_s: float = DEFAULT_PERIOD_S,
                 nvml: Any = None, clock_ns: Callable[[], int] = time.perf_counter_ns) -> None:
        self.device_index = device_index
        self.uuid = uuid
        self.period_s = period_s
        self._nvml = nvml
        self._clock_ns = clock_ns
        self._handle: Any = None
        self._thread: threading.Thread | None = None
        self._queries: dict[str, Callable[[Any], Any]] = {}
        self._unsupported: set[str] = set()
        self._stop = threading.Event()
        self.columns: dict[str, list[Any]] = {"t_ns": [], **{f: [] for f in SAMPLE_FIELDS}}
        self.processes: list[list[Any]] = []  # [t_ns, [[pid, used_bytes], ...]]
        self.device: dict[str, Any] = {}
        self.started_unix_us = 0

    def start(self) -> str | None:
        """Open NVML and start the thread; the reason (one sentence) if it cannot."""
        problem = self.open()
        if problem is None:
            self._thread = threading.Thread(target=self._run, name="rooflinectl-nvml", daemon=True)
            self._thread.start()
        return problem

    def open(self) -> str | None:
        """Open NVML and read the device's fixed facts (no thread); the reason if it cannot."""
        try:
            nvml = self._nvml or importlib.import_module("pynvml")
            nvml.nvmlInit()
            handle = None
            if self.uuid:
                handle = _first_ok(lambda: nvml.nvmlDeviceGetHandleByUUID(self.uuid))
            handle = handle or nvml.nvmlDeviceGetHandleByIndex(self.device_index)
        except Exception as exc:  # noqa: BLE001 - ImportError, NVMLError_LibraryNotFound, driver not loaded...
            first = str(exc).splitlines()[0] if str(exc) else ""
            return f"NVML unavailable ({type(exc).__name__}{': ' + first if first else ''})"
        self._nvml, self._handle = nvml, handle
        power_limit_mw = _first_ok(lambda: nvml.nvmlDeviceGetEnforcedPowerLimit(handle),
                                   lambda: nvml.nvmlDeviceGetPowerManagementLimit(handle))
        name = _first_ok(lambda: nvml.nvmlDeviceGetName(handle))
        self.device = {
            "index": self.device_index,
            "uuid": self.uuid,
            "name": name.decode() if isinstance(name, bytes) else name,
            "max_sm_clock_mhz": _first_ok(lambda: nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_SM)),
            "max_mem_clock_mhz": _first_ok(lambda: nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_MEM)),
            "power_limit_w": power_limit_mw / 1e3 if power_limit_mw else None,
        }
        self.started_unix_us = time.time_ns() // 1000
        self._queries = _queries(nvml)
        return None

    def _run(self) -> None:
        count = 0
        deadline = self._clock_ns()
        while not self._stop.is_set():
            self.sample(with_processes=count % PROCESS_EVERY == 0)
            count += 1
            now = self._clock_ns()
            deadline = next_deadline_ns(deadline, now, int(self.period_s * 1e9))
            self._stop.wait((deadline - now) / 1e9)

    def sample(self, with_processes: bool = False) -> None:
        """One row of every field (None where unsupported); stamped just before the SM clock query."""
        t_ns = self._clock_ns()
        row: dict[str, Any] = {}
        unsupported = self._unsupported
        for name, query in self._queries.items():
            if name in unsupported:
                row[name] = None
                continue
            try:
                row[name] = int(query(self._handle))
            except Exception:  # noqa: BLE001 - not supported here: stop asking
                unsupported.add(name)
                row[name] = None
        self.columns["t_ns"].append(t_ns)
        for name in SAMPLE_FIELDS:
            self.columns[name].append(row.get(name))
        if with_processes and "processes" not in unsupported:
            try:
                procs = self._nvml.nvmlDeviceGetComputeRunningProcesses(self._handle)
                self.processes.append([t_ns, [[int(p.pid), p.usedGpuMemory] for p in procs]])
            except Exception:  # noqa: BLE001
                unsupported.add("processes")

    def stop_thread(self) -> None:
        """Stop sampling (the samples stay; stop() still reads and closes NVML)."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join(timeout=5.0)
            self._thread = None

    def stop(self) -> None:
        """Stop the thread; read the other processes' utilisation NVML kept since start; close NVML."""
        if self._handle is None:
            return
        self.stop_thread()
        try:
            util = self._nvml.nvmlDeviceGetProcessUtilization(self._handle, self.started_unix_us)
        except Exception:  # noqa: BLE001 - not supported, or no samples since start
            util = []
        peak: dict[int, list[int]] = {}
        for s in util:
            seen = peak.setdefault(int(s.pid), [0, 0])
            seen[0], seen[1] = max(seen[0], int(s.smUtil)), max(seen[1], int(s.memUtil))
        self.device["process_util_max_pct"] = [[pid, sm, mem] for pid, (sm, mem) in sorted(peak.items())]
        with contextlib.suppress(Exception):
            self._nvml.nvmlShutdown()
        self._handle = None


def emit_sync_marker(clock_ns: Callable[[], int] = time.perf_counter_ns) -> tuple[int, int]:
    """Record the SYNC_NAME annotation; (perf_counter before, after) its start was taken."""
    import torch

    before = clock_ns()
    with torch.profiler.record_function(SYNC_NAME):
        after = clock_ns()
    return before, after


def trace_end_ns(trace: RawTrace) -> int:
    ends = [k.end_ns for k in trace.kernels] + [o.end_ns for o in trace.ops]
    return max(ends) if ends else 0


def on_trace_clock(sampler: NvmlSampler, sync: tuple[int, int], trace: RawTrace | None) -> dict[str, Any]:
    """The samples as the profile stores them (metadata["nvml"]): columns of numbers, `t_ns` on
    the trace's time base, cut at the trace's last event. Without the sync annotation in the
    trace, the samples keep no time ("aligned": False) and only whole-run figures can use them."""
    marker = next((o for o in (trace.ops if trace else []) if o.name == SYNC_NAME), None)
    columns = {k: list(v) for k, v in sampler.columns.items()}
    processes = [list(p) for p in sampler.processes]
    aligned = marker is not None
    if marker is not None:
        offset_ns = marker.ts_ns - (sync[0] + sync[1]) // 2
        end_ns = trace_end_ns(trace) if trace else 0
        keep = [i for i, t in enumerate(columns["t_ns"]) if t + offset_ns <= end_ns]
        columns = {k: [v[i] for i in keep] for k, v in columns.items()}
        columns["t_ns"] = [t + offset_ns for t in columns["t_ns"]]
        processes = [[t + offset_ns, procs] for t, procs in processes if t + offset_ns <= end_ns]
    return {
        "status": "sampled",
        "period_s": sampler.period_s,
        "aligned": aligned,
        "sync_uncertainty_ns": (sync[1] - sync[0]) // 2,
        "own_pid": os.getpid(),
        "devices": [{**sampler.device, "samples": columns, "processes": processes}],
    }


def _cuda_device() -> tuple[int, str | None]:
    """The GPU to sample and its UUID (NVML numbers devices without CUDA_VISIBLE_DEVICES): a rank of
    a torchrun job samples its own (LOCAL_RANK), which its script has not selected yet; else the
    current device."""
    from rooflinectl.capture.run.distributed import own_device_index
    from rooflinectl.ceilings.detect import read_torch_props

    index = own_device_index()
    return index, read_torch_props(index)[0].get("uuid")


def kernels_device(trace: RawTrace | None) -> int | None:
    """The device most of the trace's kernel time ran on (None without kernels)."""
    time_by_device: dict[int, int] = {}
    for k in trace.kernels if trace else []:
        time_by_device[k.device] = time_by_device.get(k.device, 0) + k.dur_ns
    return max(time_by_device, key=time_by_device.__getitem__) if time_by_device else None


@contextmanager
def nvml_sampling(capture: _CaptureLike, nvml: Any = None) -> Iterator[Callable[[], None]]:
    """Sample the current GPU while the block runs; on exit (after the session set capture.trace)
    put the samples, or the one-line reason there are none, in capture.metadata["nvml"].
    CPU runs are not sampled: the GPU's clocks say nothing about them. The block gets a function
    that stops the sampling thread early (the profiler stopped: later samples are cut anyway)."""
    if capture.device_kind != "cuda":
        yield lambda: None
        return
    period_s = period_from_env()
    if period_s is None:
        capture.metadata["nvml"] = {"status": "off", "message": f"switched off ({PERIOD_ENV}=0)"}
        yield lambda: None
        return
    index, uuid = _cuda_device()
    sampler = NvmlSampler(index, uuid, period_s, nvml=nvml)
    problem = sampler.start()
    if problem is not None:
        capture.metadata["nvml"] = {"status": "unavailable", "message": problem}
        yield lambda: None
        return
    try:
        sync = emit_sync_marker()
    except Exception:  # noqa: BLE001 - no profiler running: samples without alignment
        sync = (0, 0)
    try:
        yield sampler.stop_thread
    finally:
        sampler.stop()
        capture.metadata["nvml"] = on_trace_clock(sampler, sync, capture.trace)
        ran_on = kernels_device(capture.trace)
        if ran_on is not None and ran_on != index:
            capture.metadata["nvml"] = {"status": "unavailable",
                                        "message": f"sampled GPU {index}, but the kernels ran on GPU {ran_on}"}
