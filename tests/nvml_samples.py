"""Synthetic but realistic NVML samples, as capture stores them (metadata["nvml"]).

Figures follow what the H200 reports (tests/data/h200_real/record.log, ../shared/H200.md): SM
clock 1980 MHz at most and 345 MHz idle, memory clock 3201 MHz, power limit 700 W, the
clocks-event reason bits of nvml.h (0x1 idle, 0x4 sw power cap, 0x8 hw slowdown, 0x10 sync
boost, 0x20 sw thermal, 0x40 hw thermal, 0x80 hw power brake).
"""

from __future__ import annotations

from typing import Any

PERIOD_NS = 20_000_000

IDLE = 0x1
SW_POWER_CAP = 0x4
HW_SLOWDOWN = 0x8
SYNC_BOOST = 0x10
SW_THERMAL = 0x20
HW_THERMAL = 0x40
HW_POWER_BRAKE = 0x80


def nvml_metadata(rows: list[tuple[int, int, int, int]], *, processes: list[list[Any]] | None = None,
                  process_util: list[list[int]] | None = None, own_pid: int = 1000,
                  period_ns: int = PERIOD_NS) -> dict[str, Any]:
    """metadata["nvml"] from (t_ns, sm_clock_mhz, power_w, reasons) rows."""
    return {
        "status": "sampled", "period_s": period_ns / 1e9, "aligned": True, "sync_uncertainty_ns": 2_000,
        "own_pid": own_pid,
        "devices": [{
            "index": 0, "uuid": "GPU-0000", "name": "NVIDIA H200", "max_sm_clock_mhz": 1980,
            "max_mem_clock_mhz": 3201, "power_limit_w": 700.0, "process_util_max_pct": process_util or [],
            "samples": {
                "t_ns": [r[0] for r in rows],
                "sm_clock_mhz": [r[1] for r in rows],
                "mem_clock_mhz": [3201 for _ in rows],
                "power_mw": [r[2] * 1000 for r in rows],
                "temperature_c": [70 if r[3] & (SW_THERMAL | HW_THERMAL) == 0 else 88 for r in rows],
                "gpu_util_pct": [0 if r[3] & IDLE else 100 for r in rows],
                "mem_util_pct": [0 if r[3] & IDLE else 30 for r in rows],
                "reasons": [r[3] for r in rows],
            },
            "processes": processes or [],
        }],
    }


def steady_then_capped(start_ns: int, end_ns: int, cap_from_ns: int, *, capped_mhz: int = 1485,
                       reason: int = SW_POWER_CAP, period_ns: int = PERIOD_NS) -> dict[str, Any]:
    """Samples every period: full clock (1980 MHz, 520 W) before cap_from_ns, then capped_mhz with
    `reason` set (699 W) from then on."""
    rows = []
    for t in range(start_ns, end_ns + period_ns, period_ns):
        capped = t >= cap_from_ns
        rows.append((t, capped_mhz if capped else 1980, 699 if capped else 520, reason if capped else 0))
    return nvml_metadata(rows, period_ns=period_ns)
