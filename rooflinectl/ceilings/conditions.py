"""The conditions a measurement of the ceilings was taken in, and measuring until it is stable.

A roof measured while other work ran (a build, another job on the GPU) is low, and every kernel
held to it looks better than it is, or even above its roof. So `ceilings --measure` records the
machine's load and clocks when it measured, repeats the measurement until two rounds agree, and
says so; a profile with rows above a measured roof names the cached measurement as a suspect.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from rooflinectl.ceilings.measurement import Measurement

BUSY_LOAD_SHARE = 0.5  # 1-minute load average over the CPU count above which the machine is busy
BUSY_GPU_PERCENT = 10  # GPU utilisation by others, before we measure, above which the GPU is busy
STABLE_SPREAD = 0.05  # two rounds agree when every figure is within 5% of its best
MAX_ROUNDS = 3


def _gpu_state() -> dict[str, Any]:
    """Utilisation (by whoever runs now: we have not started) and clocks of GPU 0, through NVML;
    empty when NVML cannot be read."""
    try:
        import pynvml

        pynvml.nvmlInit()
        index = int((os.environ.get("CUDA_VISIBLE_DEVICES") or "0").split(",")[0] or 0)
        handle = pynvml.nvmlDeviceGetHandleByIndex(index if index >= 0 else 0)
        return {"gpu_util_percent": int(pynvml.nvmlDeviceGetUtilizationRates(handle).gpu),
                "sm_clock_mhz": int(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)),
                "mem_clock_mhz": int(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_MEM))}
    except Exception:  # NVML absent, no permission, a UUID list in CUDA_VISIBLE_DEVICES: not known
        return {}


def machine_conditions(kind: str) -> dict[str, Any]:
    """Load average over the CPU count, and on a GPU its utilisation and clocks, now."""
    cpus = os.cpu_count() or 1
    try:
        load = float(os.getloadavg()[0])
    except (OSError, AttributeError):  # Windows has no load average
        load = None
    state: dict[str, Any] = {"load_1min": load, "cpus": cpus}
    if kind == "cuda":
        state.update(_gpu_state())
    return state


def busy_reason(conditions: dict[str, Any]) -> str | None:
    """Why the machine was busy when measured (one clause), or None."""
    load, cpus = conditions.get("load_1min"), conditions.get("cpus") or 1
    reasons = []
    if isinstance(load, (int, float)) and load > BUSY_LOAD_SHARE * cpus:
        reasons.append(f"load {load:.1f} on {cpus} CPU(s)")
    util = conditions.get("gpu_util_percent")
    if isinstance(util, (int, float)) and util > BUSY_GPU_PERCENT:
        reasons.append(f"the GPU {util:.0f}% busy before measuring")
    return ", ".join(reasons) or None


def conditions_text(conditions: dict[str, Any]) -> str:
    """'load 0.3 on 16 CPUs, SM 1980 MHz, memory 3201 MHz' for a message."""
    parts = []
    if isinstance(conditions.get("load_1min"), (int, float)):
        parts.append(f"load {conditions['load_1min']:.1f} on {conditions.get('cpus')} CPU(s)")
    if conditions.get("sm_clock_mhz"):
        parts.append(f"SM {conditions['sm_clock_mhz']} MHz, memory {conditions.get('mem_clock_mhz')} MHz")
    return ", ".join(parts) or "load not known"


def _spread(rounds: list[dict[str, float]]) -> tuple[float, str]:
    """The largest (best - worst) / best over the figures every round measured, and its key."""
    worst = (0.0, "")
    for key in set.intersection(*(set(r) for r in rounds)):
        values = [r[key] for r in rounds]
        spread = (max(values) - min(values)) / max(values)
        worst = max(worst, (spread, key))
    return worst


def measure_until_stable(run_round: Callable[[float], list[Measurement]], budget_s: float, *,
                         clock: Callable[[], float] = time.monotonic) -> tuple[list[Measurement], dict[str, Any]]:
    """Rounds of run_round(seconds left) until two agree within STABLE_SPREAD (at most MAX_ROUNDS,
    and another only when the time left fits one more like the last); each figure's best round is
    kept (a roof is what the machine can do). Returns the measurements and what was done."""
    start = clock()
    rounds: list[list[Measurement]] = []
    spread, key = 0.0, ""
    while len(rounds) < MAX_ROUNDS:
        begun = clock()
        rounds.append(run_round(max(budget_s - (begun - start), 1.0)))
        values = [{m.key: float(m.value) for m in r if m.value is not None and m.value > 0 and m.unit != "s"}
                  for r in rounds]
        if len(rounds) >= 2:
            spread, key = _spread(values)
            if spread <= STABLE_SPREAD:
                break
        if budget_s - (clock() - start) < clock() - begun:
            break
    best: dict[str, Measurement] = {}
    for measurement in (m for r in rounds for m in r):
        held = best.get(measurement.key)
        if held is None or _better(measurement, held):
            best[measurement.key] = measurement
    stable = len(rounds) >= 2 and spread <= STABLE_SPREAD
    return list(best.values()), {"rounds": len(rounds), "spread": spread if len(rounds) >= 2 else None,
                                 "spread_key": key or None, "stable": stable}


def _better(candidate: Measurement, held: Measurement) -> bool:
    """A larger rate, or a shorter time (unit "s": a latency floor), or any value over none."""
    if candidate.value is None:
        return False
    if held.value is None:
        return True
    return candidate.value < held.value if candidate.unit == "s" else candidate.value > held.value


def stability_text(stability: dict[str, Any]) -> str:
    """'3 rounds, figures within 2.1% (stable)' for the message after measuring."""
    rounds, spread = stability.get("rounds") or 1, stability.get("spread")
    if rounds < 2 or spread is None:
        return "1 round (no time left for a second to check it against)"
    verdict = "stable" if stability.get("stable") else f"not stable: {stability.get('spread_key')} varied most"
    return f"{rounds} rounds, figures within {100 * spread:.1f}% of their best ({verdict})"
