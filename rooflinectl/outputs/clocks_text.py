"""The summary's lines about clocks, power and throttling (summary["clocks"]). Renders; computes nothing.

Read by `show`/`profile` (outputs/table.py): one line when NVML was not sampled, else what the
clocks and power did while the counted kernels ran, how far the run's clock moved the compute
roofs, and whether another process shared the GPU.
"""

from __future__ import annotations

from typing import Any

from rooflinectl.profile_sections import Clocks
from rooflinectl.units import percent, si


def _mhz(value: Any) -> str:
    return f"{float(value):,.0f} MHz" if value is not None else "-"


def _watts(value: Any) -> str:
    return f"{float(value):.0f} W" if value is not None else "-"


def _signed(change: float) -> str:
    return f"{100 * change:+.0f}%"


def clock_lines(clocks: Clocks | None) -> list[str]:
    """The lines `show` prints about NVML (none for CPU runs and profiles that predate sampling)."""
    if not clocks:
        return []
    if clocks.get("status") != "sampled":
        return [f"clocks, power, throttling: not sampled, {clocks.get('message') or 'NVML gave nothing'}"]
    lines = []
    sm = clocks.get("sm_clock_mhz")
    if sm:
        head = (f"clocks while kernels ran: SM {_mhz(sm['mean'])} mean (range {sm['min']:,.0f}-{_mhz(sm['max'])}"
                f", device max {_mhz(clocks.get('max_sm_clock_mhz'))})")
    else:
        head = f"clocks: {clocks.get('samples', 0)} NVML samples, none while the counted kernels ran"
    mem = clocks.get("mem_clock_mhz")
    if mem:
        head += f", memory {_mhz(mem['mean'])}"
    power = clocks.get("power_w")
    if power:
        head += (f"; power {_watts(power['mean'])} mean, {_watts(power['max'])} peak"
                 f" (limit {_watts(clocks.get('power_limit_w'))})")
    if clocks.get("temperature_c_max") is not None:
        head += f"; {clocks['temperature_c_max']:.0f} °C max"
    lines.append(head)
    kernel_s = clocks.get("kernel_time_s") or 0.0
    throttled = clocks.get("throttle_kernel_s") or {}
    if kernel_s > 0 and sm:
        items = [f"{name} {percent(s / kernel_s, 0)}" for name, s in sorted(throttled.items(), key=lambda kv: -kv[1])]
        lines.append("clocks-event reasons over kernel time: " + (", ".join(items) if items else "none (not throttled)"))
    for shift in clocks.get("roof_shifts") or []:
        if shift.get("notable"):
            lines.append(f"{shift['roof']} roof follows the clock: {_signed(shift['peak_change'])} (held at "
                         f"{_mhz(shift['roof_clock_mhz'])}, kernels ran at {_mhz(shift['kernel_clock_mhz'])}); "
                         f"attainable on its rows {_signed(shift['attainable_change'])}")
    others = clocks.get("other_processes") or {}
    if others.get("count"):
        lines.append(f"GPU shared: {others['count']} other process(es), {si(others.get('used_bytes') or 0.0, 'B')}"
                     + (f", up to {others['sm_util_max_pct']:.0f}% SM" if others.get("sm_util_max_pct") else "")
                     + ": timings are not trustworthy")
    return lines
