"""Detect the GPU (torch device properties and NVML) and the CPU; say what could not be read.

Each GPU fact comes from torch or NVML, whichever answers (a CUDA 13 build can read 0 for the
clock properties; NVML may be missing or refuse): `GpuInfo.sources` names the one used and
`GpuInfo.missing` lists, in words, what neither could say.
"""

from __future__ import annotations

import contextlib
import os
import platform
from dataclasses import asdict, dataclass, field
from typing import Any

from rooflinectl.ceilings.specs import FP32_CORES_PER_SM_BY_MAJOR

# NVML clocks-event (throttle) reason bits, from nvml.h (pynvml's nvmlClocksEventReason* and
# nvmlClocksThrottleReason* constants; tests/test_nvml_capture.py checks the two agree).
THROTTLE_REASONS: dict[int, str] = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
    0x200: "board_limit",
    0x400: "reliability",
}


def decode_throttle_reasons(mask: int) -> list[str]:
    """Names of the bits set in an NVML clocks-event-reasons mask ("unknown_0x..." for new bits)."""
    names = [name for bit, name in THROTTLE_REASONS.items() if mask & bit]
    rest = mask & ~sum(THROTTLE_REASONS)
    if rest:
        names.append(f"unknown_{rest:#x}")
    return names


@dataclass
class GpuInfo:
    """What was learnt about one GPU; None where neither torch nor NVML could say."""

    name: str = "unknown GPU"
    index: int = 0
    compute_capability: tuple[int, int] | None = None
    sms: int | None = None
    l2_bytes: int | None = None
    memory_bytes: int | None = None
    max_sm_clock_hz: float | None = None
    current_sm_clock_hz: float | None = None
    max_mem_clock_hz: float | None = None
    bus_width_bits: int | None = None
    power_limit_w: float | None = None
    throttle_reasons: list[str] | None = None
    uuid: str | None = None
    driver: str | None = None
    pcie_gen: int | None = None  # the PCIe link to the host: max generation and width with this system
    pcie_width: int | None = None
    sources: dict[str, str] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)

    def dram_bytes_per_s_from_clocks(self) -> float | None:
        """2 transfers per memory clock x bus width: the DRAM peak the clocks imply."""
        if self.max_mem_clock_hz and self.bus_width_bits:
            return 2 * self.max_mem_clock_hz * self.bus_width_bits / 8
        return None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        if self.compute_capability is not None:
            data["compute_capability"] = list(self.compute_capability)
        return data


def _positive(value: Any) -> Any:
    """None for missing or zero readings (CUDA 13 reports 0 for removed clock properties)."""
    if value is None:
        return None
    try:
        return value if float(value) > 0 else None
    except (TypeError, ValueError):
        return value or None


def read_torch_props(index: int) -> tuple[dict[str, Any], str | None]:
    """GPU facts from torch.cuda.get_device_properties, in base units; (fields, error)."""
    try:
        import torch

        props = torch.cuda.get_device_properties(index)
    except Exception as exc:  # torch raises several types for a missing or broken CUDA
        return {}, f"torch could not read device {index}: {exc}"
    khz = 1e3
    clock = _positive(getattr(props, "clock_rate", None))
    mem_clock = _positive(getattr(props, "memory_clock_rate", None))
    uuid = getattr(props, "uuid", None)
    fields = {
        "name": getattr(props, "name", None),
        "compute_capability": (int(props.major), int(props.minor)),
        "sms": _positive(getattr(props, "multi_processor_count", None)),
        "l2_bytes": _positive(getattr(props, "L2_cache_size", None)),
        "memory_bytes": _positive(getattr(props, "total_memory", None)),
        "max_sm_clock_hz": clock * khz if clock else None,
        "max_mem_clock_hz": mem_clock * khz if mem_clock else None,
        "bus_width_bits": _positive(getattr(props, "memory_bus_width", None)),
        "uuid": f"GPU-{uuid}" if uuid and not str(uuid).startswith("GPU-") else (uuid and str(uuid)),
    }
    return fields, None


def _nvml_device(index: int, uuid: str | None) -> Any:
    import pynvml

    pynvml.nvmlInit()
    if uuid:
        try:
            return pynvml.nvmlDeviceGetHandleByUUID(uuid)
        except pynvml.NVMLError:
            pass
    return pynvml.nvmlDeviceGetHandleByIndex(index)


def read_nvml(index: int, uuid: str | None = None) -> tuple[dict[str, Any], str | None]:
    """GPU facts from NVML, in base units; (fields, error). Each query may fail on its own."""
    try:
        import pynvml

        handle = _nvml_device(index, uuid)
    except Exception as exc:  # ImportError, NVMLError_LibraryNotFound, driver not loaded...
        return {}, f"NVML unavailable ({type(exc).__name__}: {exc})"
    mhz = 1e6
    queries: dict[str, Any] = {
        "name": lambda: pynvml.nvmlDeviceGetName(handle),
        "uuid": lambda: pynvml.nvmlDeviceGetUUID(handle),
        "driver": lambda: pynvml.nvmlSystemGetDriverVersion(),
        "compute_capability": lambda: tuple(pynvml.nvmlDeviceGetCudaComputeCapability(handle)),
        "fp32_cores": lambda: pynvml.nvmlDeviceGetNumGpuCores(handle),
        "memory_bytes": lambda: pynvml.nvmlDeviceGetMemoryInfo(handle).total,
        "max_sm_clock_hz": lambda: pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM) * mhz,
        "current_sm_clock_hz": lambda: pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM) * mhz,
        "max_mem_clock_hz": lambda: pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_MEM) * mhz,
        "bus_width_bits": lambda: pynvml.nvmlDeviceGetMemoryBusWidth(handle),
        "power_limit_w": lambda: pynvml.nvmlDeviceGetPowerManagementLimit(handle) / 1e3,
        # the link's maximum with this system (the current one drops to Gen1 when idle)
        "pcie_gen": lambda: pynvml.nvmlDeviceGetMaxPcieLinkGeneration(handle),
        "pcie_width": lambda: pynvml.nvmlDeviceGetMaxPcieLinkWidth(handle),
    }
    fields: dict[str, Any] = {}
    for key, query in queries.items():
        try:
            fields[key] = _positive(query())
        except Exception:  # NVMLError_NotSupported and friends: that one fact stays unknown
            fields[key] = None
    snap = nvml_snapshot(handle)
    fields["throttle_reasons"] = snap.get("throttle_reasons")
    if isinstance(fields.get("name"), bytes):
        fields["name"] = fields["name"].decode()
    return fields, None


def nvml_snapshot(handle: Any = None, index: int = 0) -> dict[str, Any]:
    """Clocks, power and throttle reasons right now ({} when NVML cannot say)."""
    try:
        import pynvml

        if handle is None:
            handle = _nvml_device(index, None)
    except Exception:
        return {}
    out: dict[str, Any] = {}
    for key, query in {
        "sm_clock_mhz": lambda: pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM),
        "mem_clock_mhz": lambda: pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_MEM),
        "power_w": lambda: pynvml.nvmlDeviceGetPowerUsage(handle) / 1e3,
        "temperature_c": lambda: pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU),
    }.items():
        with contextlib.suppress(Exception):
            out[key] = query()
    getter = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
        pynvml, "nvmlDeviceGetCurrentClocksThrottleReasons", None
    )
    with contextlib.suppress(Exception):
        out["throttle_reasons"] = decode_throttle_reasons(int(getter(handle)))
    return out


_DESCRIBE = {
    "compute_capability": "compute capability",
    "sms": "SM count",
    "l2_bytes": "L2 size",
    "memory_bytes": "memory size",
    "max_sm_clock_hz": "max SM clock",
    "current_sm_clock_hz": "current SM clock",
    "max_mem_clock_hz": "memory clock",
    "bus_width_bits": "memory bus width",
    "power_limit_w": "power limit",
    "throttle_reasons": "clock-throttle reasons",
    "uuid": "device UUID",
    "driver": "driver version",
}


def merge_gpu_info(
    index: int,
    torch_fields: dict[str, Any],
    torch_error: str | None,
    nvml_fields: dict[str, Any],
    nvml_error: str | None,
) -> GpuInfo:
    """One GpuInfo from both sources: torch first for what it knows, NVML for the rest."""
    info = GpuInfo(index=index)
    for err in (torch_error, nvml_error):
        if err:
            info.missing.append(err)
    order = {"current_sm_clock_hz": ("nvml",), "power_limit_w": ("nvml",),
             "throttle_reasons": ("nvml",), "driver": ("nvml",), "max_sm_clock_hz": ("nvml", "torch")}
    sources = {"torch": torch_fields, "nvml": nvml_fields}
    for key in ("name", *_DESCRIBE):
        for src in order.get(key, ("torch", "nvml")):
            value = sources[src].get(key)
            if value is not None:
                setattr(info, key, value)
                info.sources[key] = src
                break
        else:
            if key == "sms" and nvml_fields.get("fp32_cores") and info.compute_capability:
                per_sm = FP32_CORES_PER_SM_BY_MAJOR.get(info.compute_capability[0])
                if per_sm:
                    info.sms = int(nvml_fields["fp32_cores"]) // per_sm
                    info.sources["sms"] = f"nvml (CUDA cores / {per_sm})"
                    continue
            if key == "driver":
                driver = _driver_from_proc()
                if driver:
                    info.driver, info.sources["driver"] = driver, "/proc/driver/nvidia/version"
                    continue
            if key != "name":
                info.missing.append(f"could not read the {_DESCRIBE[key]}")
    for key in ("pcie_gen", "pcie_width"):  # optional: the host-link roof falls back to an estimate
        if nvml_fields.get(key):
            setattr(info, key, int(nvml_fields[key]))
            info.sources[key] = "nvml"
    if info.compute_capability is not None:
        info.compute_capability = (int(info.compute_capability[0]), int(info.compute_capability[1]))
    return info


def _driver_from_proc() -> str | None:
    try:
        with open("/proc/driver/nvidia/version", encoding="utf-8") as fh:
            words = fh.readline().split()
    except OSError:
        return None
    return next((w for w in words if w[:1].isdigit() and "." in w), None)


def detect_gpu(index: int | None = None) -> GpuInfo:
    """Detect the current (or given) CUDA device from torch and NVML; never raises."""
    if index is None:
        try:
            import torch

            index = torch.cuda.current_device()
        except Exception:
            index = 0
    torch_fields, torch_error = read_torch_props(index)
    nvml_fields, nvml_error = read_nvml(index, torch_fields.get("uuid"))
    return merge_gpu_info(index, torch_fields, torch_error, nvml_fields, nvml_error)


@dataclass
class CpuInfo:
    name: str
    logical_cpus: int
    threads: int  # torch intra-op threads: what a matmul will use
    llc_bytes: int | None = None  # the last-level cache (sysfs), what the cache roof's level holds

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def detect_cpu() -> CpuInfo:
    """CPU model (from /proc/cpuinfo where there is one), logical CPUs and torch's thread count."""
    name = platform.processor() or platform.machine() or "cpu"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.lower().startswith(("model name", "hardware")):
                    name = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        import torch

        threads = int(torch.get_num_threads())
    except Exception:
        threads = os.cpu_count() or 1
    return CpuInfo(name=name, logical_cpus=os.cpu_count() or 1, threads=threads, llc_bytes=last_level_cache_bytes())


def last_level_cache_bytes(root: str = "/sys/devices/system/cpu/cpu0/cache") -> int | None:
    """Size of the highest-level data or unified cache of CPU 0 from sysfs ("32768K"), None where
    sysfs cannot say (not Linux, a sandbox)."""
    best: tuple[int, int] | None = None
    try:
        entries = sorted(os.listdir(root))
    except OSError:
        return None
    for entry in entries:
        if not entry.startswith("index"):
            continue
        try:
            with open(os.path.join(root, entry, "type"), encoding="utf-8") as fh:
                kind = fh.read().strip()
            with open(os.path.join(root, entry, "level"), encoding="utf-8") as fh:
                level = int(fh.read().strip())
            with open(os.path.join(root, entry, "size"), encoding="utf-8") as fh:
                size = _cache_size(fh.read().strip())
        except (OSError, ValueError):
            continue
        if kind != "Instruction" and size and (best is None or level > best[0]):
            best = (level, size)
    return best[1] if best else None


def _cache_size(text: str) -> int | None:
    """"32768K" -> 33554432; "1M" -> 1048576; a plain number is bytes."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper()
    if text and text[-1] in units:
        return int(text[:-1]) * units[text[-1]]
    return int(text) if text.isdigit() else None
