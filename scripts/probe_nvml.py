"""NVML facts for the sampler design: per-call cost of each query, and what the samples API gives.
Prints one JSON object."""

from __future__ import annotations

import json
import time

import pynvml as nv

nv.nvmlInit()
h = nv.nvmlDeviceGetHandleByIndex(0)
out: dict = {"driver": nv.nvmlSystemGetDriverVersion()}
queries = {
    "clock_sm": lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM),
    "clock_mem": lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM),
    "power_mw": lambda: nv.nvmlDeviceGetPowerUsage(h),
    "power_limit_mw": lambda: nv.nvmlDeviceGetPowerManagementLimit(h),
    "temp_c": lambda: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU),
    "util": lambda: (lambda u: [u.gpu, u.memory])(nv.nvmlDeviceGetUtilizationRates(h)),
    "reasons": lambda: nv.nvmlDeviceGetCurrentClocksEventReasons(h),
    "procs": lambda: [(p.pid, p.usedGpuMemory) for p in nv.nvmlDeviceGetComputeRunningProcesses(h)],
    "energy_mj": lambda: nv.nvmlDeviceGetTotalEnergyConsumption(h),
}
for name, fn in queries.items():
    try:
        value = fn()
        t0 = time.perf_counter()
        for _ in range(200):
            fn()
        out[name] = {"value": value, "us_per_call": (time.perf_counter() - t0) / 200 * 1e6}
    except Exception as exc:  # noqa: BLE001 - a probe: record what failed
        out[name] = {"error": repr(exc)}
for sample_type in ("NVML_GRAPHICS_CLOCK_SAMPLES", "NVML_TOTAL_POWER_SAMPLES", "NVML_GPU_UTILIZATION_SAMPLES"):
    try:
        vtype, samples = nv.nvmlDeviceGetSamples(h, getattr(nv, sample_type), 0)
        out[sample_type] = {"n": len(samples), "first": [[s.timeStamp, str(s.sampleValue.uiVal)] for s in samples[:3]],
                            "now_us": int(time.time() * 1e6)}
    except Exception as exc:  # noqa: BLE001
        out[sample_type] = {"error": repr(exc)}
print(json.dumps(out, indent=1, default=str))
