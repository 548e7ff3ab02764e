"""The NVML sampler in capture: what it records, how it lines samples up with the trace, and the
one line it leaves when NVML is missing. pynvml is replaced by tests/fake_nvml.py (nvmlInit fails
on a machine without the driver)."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

import pynvml
import torch
from fake_nvml import FakeNvml

from rooflinectl.capture.read.raw import RawKernel, RawOp, RawTrace
from rooflinectl.capture.read.trace import from_chrome_trace
from rooflinectl.capture.run import nvml_sampler
from rooflinectl.capture.run.nvml_sampler import (
    SYNC_NAME,
    NvmlSampler,
    emit_sync_marker,
    next_deadline_ns,
    nvml_sampling,
    on_trace_clock,
    period_from_env,
)
from rooflinectl.capture.run.session import export_trace
from rooflinectl.ceilings.detect import THROTTLE_REASONS


def _camel_to_snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def test_throttle_reason_names_are_pynvmls_constants():
    """Our bit -> name table is pynvml's nvmlClocksThrottleReason* constants, bit for bit."""
    prefix = "nvmlClocksThrottleReason"
    theirs = {getattr(pynvml, n): _camel_to_snake(n[len(prefix):]) for n in dir(pynvml)
              if n.startswith(prefix) and n[len(prefix):] not in ("All", "None", "UserDefinedClocks")}
    assert theirs == THROTTLE_REASONS


def test_period_from_env():
    assert period_from_env({}) == nvml_sampler.DEFAULT_PERIOD_S
    assert period_from_env({"ROOFLINECTL_NVML_PERIOD_S": "0.05"}) == 0.05
    assert period_from_env({"ROOFLINECTL_NVML_PERIOD_S": "0"}) is None


def test_a_late_sample_brings_no_burst():
    assert next_deadline_ns(1_000, 1_500, 20) == 1_520  # late by 24 periods: next one a period from now
    assert next_deadline_ns(1_000, 1_005, 20) == 1_020  # on time: keep the phase


def test_sample_records_each_field_and_stops_asking_an_unsupported_query():
    nvml = FakeNvml(sm=[1980, 1755], power_mw=[650_000, 699_000], reasons=[0, 0x4],
                    temp=[pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)])
    ticks = iter([100, 200, 300])
    sampler = NvmlSampler(0, "GPU-x", 0.02, nvml=nvml, clock_ns=lambda: next(ticks))
    assert sampler.open() is None  # no thread: samples taken by hand
    sampler.sample(with_processes=True)
    sampler.sample()
    cols = sampler.columns
    assert cols["t_ns"] == [100, 200]
    assert cols["sm_clock_mhz"] == [1980, 1755]
    assert cols["power_mw"] == [650_000, 699_000]
    assert cols["reasons"] == [0, 4]
    assert cols["temperature_c"] == [None, None]
    assert nvml.calls["temp"] == 1  # not asked again after NotSupported
    assert sampler.processes == [[100, []]]


def test_thread_samples_until_stopped_and_reads_process_utilisation_at_stop():
    """The thread's schedule is next_deadline_ns (above); here: it samples, stops when told, and
    stop() reads the processes' utilisation and closes NVML. No timing asserted (CI machines are busy)."""
    nvml = FakeNvml(procs=[[(4242, 1 << 30)]], proc_util=[(4242, 80, 10), (4242, 95, 20), (7, 5, 0)])
    sampler = NvmlSampler(0, None, 0.001, nvml=nvml)
    assert sampler.start() is None
    deadline = time.monotonic() + 10
    while len(sampler.columns["t_ns"]) < 5 and time.monotonic() < deadline:
        time.sleep(0.005)
    sampler.stop()
    n = len(sampler.columns["t_ns"])
    assert n >= 5
    time.sleep(0.01)
    assert len(sampler.columns["t_ns"]) == n  # nothing sampled after stop()
    assert sampler.columns["t_ns"] == sorted(sampler.columns["t_ns"])
    assert sampler.device["power_limit_w"] == 700.0
    assert sampler.device["max_sm_clock_mhz"] == 1980
    assert sampler.device["process_util_max_pct"] == [[7, 5, 0], [4242, 95, 20]]
    assert sampler.processes[0][1] == [[4242, 1 << 30]]
    assert nvml.shutdown


def test_start_without_nvml_says_why_in_one_line():
    nvml = FakeNvml(init_error=pynvml.NVMLError_LibraryNotFound(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND))
    message = NvmlSampler(0, None, nvml=nvml).start()
    assert message is not None and "\n" not in message
    assert message.startswith("NVML unavailable (NVMLError_LibraryNotFound")


@dataclass
class _Capture:
    device_kind: str
    metadata: dict[str, Any] = field(default_factory=dict)
    trace: RawTrace | None = None


def test_missing_nvml_leaves_one_line_in_the_capture(monkeypatch):
    monkeypatch.setattr(nvml_sampler, "_cuda_device", lambda: (0, None))
    nvml = FakeNvml(init_error=pynvml.NVMLError_DriverNotLoaded(pynvml.NVML_ERROR_DRIVER_NOT_LOADED))
    capture = _Capture("cuda")
    with nvml_sampling(capture, nvml=nvml):
        pass
    info = capture.metadata["nvml"]
    assert info["status"] == "unavailable"
    assert "\n" not in info["message"]
    assert info["message"].startswith("NVML unavailable (NVMLError_DriverNotLoaded")


def test_cpu_runs_are_not_sampled():
    capture = _Capture("cpu")
    with nvml_sampling(capture, nvml=FakeNvml()):
        pass
    assert "nvml" not in capture.metadata


def test_sampling_switched_off_by_env(monkeypatch):
    monkeypatch.setenv("ROOFLINECTL_NVML_PERIOD_S", "0")
    capture = _Capture("cuda")
    with nvml_sampling(capture, nvml=FakeNvml()):
        pass
    assert capture.metadata["nvml"]["status"] == "off"


def _trace_with_marker(marker_ts_ns: int, end_ns: int) -> RawTrace:
    ops = [RawOp(-1, SYNC_NAME, "user_annotation", 1, marker_ts_ns, 1000)]
    kernels = [RawKernel("k", "kernel", end_ns - 10, 10, 1, 1)]
    return RawTrace(ops=ops, kernels=kernels, launch_ts_ns={})


def test_samples_move_to_the_trace_clock_and_stop_at_its_end():
    sampler = NvmlSampler(0, None, 0.02, nvml=FakeNvml())
    sampler.columns["t_ns"] = [1_000_000, 1_020_000, 1_040_000, 9_000_000]
    for name in nvml_sampler.SAMPLE_FIELDS:
        sampler.columns[name] = [1, 2, 3, 4]
    sampler.processes = [[1_020_000, [[1, 2]]], [9_000_000, [[1, 2]]]]
    # the marker started between perf 1_009_000 and 1_011_000; in the trace it is at 50_000 ns
    stored = on_trace_clock(sampler, (1_009_000, 1_011_000), _trace_with_marker(50_000, 100_000))
    device = stored["devices"][0]
    assert stored["aligned"] and stored["sync_uncertainty_ns"] == 1_000
    assert device["samples"]["t_ns"] == [40_000, 60_000, 80_000]  # perf - 1_010_000 + 50_000; the last one cut
    assert device["samples"]["sm_clock_mhz"] == [1, 2, 3]
    assert device["processes"] == [[60_000, [[1, 2]]]]


def test_samples_without_the_marker_are_kept_unaligned():
    sampler = NvmlSampler(0, None, 0.02, nvml=FakeNvml())
    sampler.columns["t_ns"] = [5]
    stored = on_trace_clock(sampler, (0, 0), None)
    assert stored["aligned"] is False and stored["devices"][0]["samples"]["t_ns"] == [5]


def test_marker_ties_perf_counter_to_the_profilers_clock():
    """Against the real profiler: an annotation recorded later, between two perf_counter
    readings, lands where the marker's offset puts those readings (within a few microseconds)."""
    prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
    prof.start()
    with torch.profiler.record_function("warm"):  # the first annotation pays a one-off set-up cost
        pass
    sync = emit_sync_marker()
    time.sleep(0.03)
    before = time.perf_counter_ns()
    with torch.profiler.record_function("probe"):
        after = time.perf_counter_ns()
    prof.stop()
    trace = from_chrome_trace(export_trace(prof))
    marker = next(o for o in trace.ops if o.name == SYNC_NAME)
    probe = next(o for o in trace.ops if o.name == "probe")
    offset = marker.ts_ns - (sync[0] + sync[1]) // 2
    slack_ns = (sync[1] - sync[0]) // 2 + 50_000
    assert before + offset - slack_ns <= probe.ts_ns <= after + offset + slack_ns
