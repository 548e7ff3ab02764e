"""A scripted stand-in for pynvml: the few calls the NVML sampler makes, answering from lists.

Each query returns the next value of its script (the last one repeats); a value that is an
exception instance is raised instead, as NVML raises NVMLError_NotSupported per query.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pynvml


class FakeNvml:
    NVML_CLOCK_SM = pynvml.NVML_CLOCK_SM
    NVML_CLOCK_MEM = pynvml.NVML_CLOCK_MEM
    NVML_TEMPERATURE_GPU = pynvml.NVML_TEMPERATURE_GPU

    def __init__(self, *, init_error: Exception | None = None, **scripts: list[Any]) -> None:
        self.init_error = init_error
        self.scripts = {"sm": [1980], "mem": [3201], "power_mw": [500_000], "temp": [40], "util": [(90, 40)],
                        "reasons": [0], "procs": [[]], "proc_util": [], **scripts}
        self.calls: dict[str, int] = {}
        self.shutdown = False

    def _next(self, name: str) -> Any:
        n = self.calls.get(name, 0)
        self.calls[name] = n + 1
        script = self.scripts[name]
        value = script[min(n, len(script) - 1)]
        if isinstance(value, Exception):
            raise value
        return value

    def nvmlInit(self) -> None:
        if self.init_error is not None:
            raise self.init_error

    def nvmlShutdown(self) -> None:
        self.shutdown = True

    def nvmlDeviceGetHandleByUUID(self, uuid: str) -> str:
        return f"handle:{uuid}"

    def nvmlDeviceGetHandleByIndex(self, index: int) -> str:
        return f"handle:{index}"

    def nvmlDeviceGetName(self, handle: Any) -> bytes:
        return b"NVIDIA H200"

    def nvmlDeviceGetMaxClockInfo(self, handle: Any, clock: int) -> int:
        return 1980 if clock == self.NVML_CLOCK_SM else 3201

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: Any) -> int:
        return 700_000

    def nvmlDeviceGetClockInfo(self, handle: Any, clock: int) -> int:
        return self._next("sm" if clock == self.NVML_CLOCK_SM else "mem")

    def nvmlDeviceGetPowerUsage(self, handle: Any) -> int:
        return self._next("power_mw")

    def nvmlDeviceGetTemperature(self, handle: Any, sensor: int) -> int:
        return self._next("temp")

    def nvmlDeviceGetUtilizationRates(self, handle: Any) -> SimpleNamespace:
        gpu, memory = self._next("util")
        return SimpleNamespace(gpu=gpu, memory=memory)

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: Any) -> int:
        return self._next("reasons")

    def nvmlDeviceGetComputeRunningProcesses(self, handle: Any) -> list[SimpleNamespace]:
        return [SimpleNamespace(pid=pid, usedGpuMemory=used) for pid, used in self._next("procs")]

    def nvmlDeviceGetProcessUtilization(self, handle: Any, since_us: int) -> list[SimpleNamespace]:
        samples = self.scripts["proc_util"]
        if not samples:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_FOUND)
        return [SimpleNamespace(pid=pid, smUtil=sm, memUtil=mem, timeStamp=since_us + 1) for pid, sm, mem in samples]
