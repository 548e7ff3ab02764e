"""Ceilings: what the device can do. `current_ceilings` is the one entry point analysis uses.

Spec roofs come from detection and the spec table (specs.py); measured roofs from
`rooflinectl ceilings --measure`, cached per device (cache.py) and used whenever present; a GPU
without its own measurement borrows one of another GPU of the same model on this machine (a
rank of a multi-GPU job runs on a GPU the measurement did not). The link roof (collectives)
comes from the GPUs' NVLink or PCIe facts (topology.py) until --measure measures it.
`current_ceilings` never measures: it is fast, and never raises for an unknown GPU or a
missing NVML (details["missing"] says what could not be read). A measurement records the load
and clocks it was taken at and is repeated until stable (conditions.py).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from rooflinectl.ceilings import cache
from rooflinectl.ceilings.build import (
    apply_measurements,
    cpu_estimate_ceilings,
    gpu_spec_ceilings,
    ridge_points,
)
from rooflinectl.ceilings.conditions import machine_conditions, measure_until_stable
from rooflinectl.ceilings.detect import GpuInfo, detect_cpu, detect_gpu
from rooflinectl.ceilings.measurement import Measurement, Progress, run_steps
from rooflinectl.ceilings.model import Ceilings, Roof
from rooflinectl.ceilings.topology import link_spec_roof, read_topology
from rooflinectl.errors import EnvironmentProblem, UsageError

DEVICE_KINDS = ("auto", "cuda", "cpu")
DEFAULT_BUDGET_S = 16.0  # measuring; imports and CUDA start-up come on top


def _torch_version() -> str:
    import torch

    return str(torch.__version__)


def resolve_device_kind(device_kind: str) -> str:
    """"auto" -> "cuda" when a GPU is usable, else "cpu"; "cuda" without CUDA is an error."""
    if device_kind not in DEVICE_KINDS:
        raise UsageError(f"unknown device kind '{device_kind}': use one of {', '.join(DEVICE_KINDS)}")
    if device_kind == "cpu":
        return "cpu"
    import torch

    if torch.cuda.is_available():
        return "cuda"
    if device_kind == "cuda":
        raise EnvironmentProblem("CUDA is not available here (no GPU, driver or CUDA build of torch); "
                                 "use --device cpu")
    return "cpu"


def _base(device_kind: str) -> tuple[Ceilings, dict[str, Any], Any]:
    """Spec (or estimate) ceilings, the cache identity, and the detected GpuInfo or CpuInfo."""
    if device_kind == "cuda":
        info = detect_gpu()
        identity = {"uuid": info.uuid or f"name:{info.name}", "driver": info.driver or "unknown",
                    "torch": _torch_version()}
        ceilings = gpu_spec_ceilings(info)
        topology = read_topology(with_smi=False)
        link = link_spec_roof(topology, info.uuid)
        if link is not None:
            ceilings.link_bytes_per_s["intra_node"] = link
            ceilings.details["link"] = {"gpus": len(topology["gpus"])}
        return ceilings, identity, info
    cpu = detect_cpu()
    identity = {"cpu": cpu.name, "logical_cpus": cpu.logical_cpus, "threads": cpu.threads,
                "torch": _torch_version()}
    return cpu_estimate_ceilings(cpu), identity, cpu


def _with_cache(ceilings: Ceilings, identity: dict[str, Any], kind: str) -> Ceilings:
    found = cache.load(kind, identity)
    ceilings.details["identity"] = identity
    if found is None and kind == "cuda":
        found = cache.load_same_model(kind, identity, ceilings.device_name)
        if found is not None:
            ceilings.details["missing"].append(
                f"no measurement of this GPU: the measured ceilings of another {ceilings.device_name} on this "
                f"machine are used ({found[1].get('identity', {}).get('uuid', '?')})")
    if found is None:
        ceilings.details["cache"] = None
        ceilings.details["missing"].append(
            "no measured ceilings cached for this device: run `rooflinectl ceilings --measure`")
        return ceilings
    measurements, header = found
    ceilings.details["cache"] = header["path"]
    ceilings.details["measured_conditions"] = header.get("conditions")  # None: measured before they were recorded
    ceilings.details["stability"] = header.get("stability")
    return apply_measurements(ceilings, measurements, measured_at=str(header.get("measured_at", "")))


def current_ceilings(device_kind: str, *, use_measured: bool = True) -> Ceilings:
    """Ceilings of this machine's GPU ("cuda") or CPU ("cpu"): spec or estimate, plus cached
    measured values (source "measured") when `rooflinectl ceilings --measure` has run here."""
    kind = resolve_device_kind(device_kind)
    ceilings, identity, _info = _base(kind)
    if not use_measured:
        ceilings.details["identity"] = identity
        return ceilings
    return _with_cache(ceilings, identity, kind)


def recorded_gpu_ceilings(properties: dict[str, Any]) -> Ceilings:
    """Spec ceilings of the GPU a saved trace ran on, from the trace's deviceProperties (name,
    compute capability, SM count, memory), not of this machine: a trace from an H200 analysed on
    a laptop is held to an H200's roofs. Never measured here (the GPU is not here), and without
    its clock the datasheet figures stand; details["missing"] says so."""
    major, minor = properties.get("computeMajor"), properties.get("computeMinor")
    info = GpuInfo(
        name=str(properties.get("name") or "unknown GPU"),
        compute_capability=(int(major), int(minor)) if isinstance(major, int) and isinstance(minor, int) else None,
        sms=int(properties["numSms"]) if isinstance(properties.get("numSms"), int) else None,
        memory_bytes=int(properties["totalGlobalMem"]) if isinstance(properties.get("totalGlobalMem"), int) else None,
        missing=["the GPU is not on this machine: spec roofs from the trace's device properties, not measured"],
    )
    return gpu_spec_ceilings(info)


def _measure_link(progress: Progress | None) -> list[Measurement]:
    """The all-reduce bus bandwidth between this machine's GPUs (measure_link.py), in its own budget."""
    from rooflinectl.ceilings.measure_link import LINK_BUDGET_S, measure_link

    return run_steps([("link all-reduce", measure_link)], budget_s=LINK_BUDGET_S, progress=progress)


def _add_link_measurement(kind: str, identity: dict[str, Any], cached: tuple[list[Measurement], dict[str, Any]],
                          ceilings: Ceilings, progress: Progress | None) -> None:
    """Measure the link and add it to a cached measurement that lacks it."""
    _add_measurements(kind, identity, cached, ceilings, _measure_link(progress))


def _add_measurements(kind: str, identity: dict[str, Any], cached: tuple[list[Measurement], dict[str, Any]],
                      ceilings: Ceilings, added: list[Measurement]) -> None:
    """Store a cached measurement with figures measured since (a step it was made without, or
    made by an older method: an added figure replaces the cached one of its key)."""
    measurements, header = cached
    keys = {m.key for m in added}
    measurements = [m for m in measurements if m.key not in keys] + added
    try:
        cache.store(kind, identity, measurements, measured_at=str(header.get("measured_at", "")),
                    extra={"device": header.get("device") or ceilings.details["device"],
                           **{k: header[k] for k in ("conditions", "stability") if k in header}})
    except OSError as exc:
        ceilings.details["missing"].append(f"could not write the cache: {exc}")


def _remeasure_stale_cpu_steps(kind: str, identity: dict[str, Any], cached: tuple[list[Measurement], dict[str, Any]],
                               ceilings: Ceilings, info: Any, budget_s: float, progress: Progress | None) -> None:
    """Measure again, and cache, the CPU steps whose cached figures an older method made (the
    matmul roofs before they were the fastest call over many sizes: real matmuls beat them)."""
    from rooflinectl.ceilings.measure_cpu import cpu_steps, stale_cpu_step_names

    stale = stale_cpu_step_names(cached[0])
    if stale:
        steps = [step for step in cpu_steps(info.threads, info.llc_bytes) if step[0] in stale]
        _add_measurements(kind, identity, cached, ceilings, run_steps(steps, budget_s=budget_s, progress=progress))


def measure_ceilings(device_kind: str = "auto", *, refresh: bool = False,
                     budget_s: float = DEFAULT_BUDGET_S, progress: Progress | None = None) -> Ceilings:
    """Measured ceilings: from the cache when present (unless refresh), else measured and cached."""
    kind = resolve_device_kind(device_kind)
    ceilings, identity, info = _base(kind)
    cached = None if refresh else cache.load(kind, identity)
    if cached is not None and kind == "cuda" and not any(m.key.startswith("link.") for m in cached[0]):
        _add_link_measurement(kind, identity, cached, ceilings, progress)  # a cache from before links were measured
    if cached is not None and kind == "cpu" and not any(m.key.startswith("cache.") for m in cached[0]):
        # a cache from before the cache roof was measured
        from rooflinectl.ceilings.measure_cpu import measure_cache

        _add_measurements(kind, identity, cached, ceilings,
                          run_steps([("CPU cache bandwidth", lambda: measure_cache(info.threads, info.llc_bytes))],
                                    budget_s=budget_s, progress=progress))
    if cached is not None and kind == "cpu":
        _remeasure_stale_cpu_steps(kind, identity, cached, ceilings, info, budget_s, progress)
    if cached is not None:
        return _with_cache(ceilings, identity, kind)
    if kind == "cuda":
        from rooflinectl.ceilings.measure_gpu import gpu_steps

        steps = gpu_steps(info)
    else:
        from rooflinectl.ceilings.measure_cpu import cpu_steps

        steps = cpu_steps(info.threads, info.llc_bytes)
    conditions = machine_conditions(kind)  # before we load the machine ourselves
    measurements, stability = measure_until_stable(
        lambda left_s: run_steps(steps, budget_s=left_s, progress=progress), budget_s)
    if kind == "cuda":
        measurements += _measure_link(progress)
    when = datetime.now(timezone.utc).isoformat(timespec="seconds")
    ceilings.details["identity"] = identity
    ceilings.details.update(measured_conditions=conditions, stability=stability, measured_now=True)
    try:
        ceilings.details["cache"] = str(cache.store(kind, identity, measurements, measured_at=when,
                                                    extra={"device": ceilings.details["device"],
                                                           "conditions": conditions, "stability": stability}))
    except OSError as exc:  # a read-only home must not lose the figures just measured
        ceilings.details["cache"] = None
        ceilings.details["missing"].append(f"could not write the cache: {exc}")
    return apply_measurements(ceilings, measurements, measured_at=when)


__all__ = [
    "Ceilings",
    "Roof",
    "current_ceilings",
    "measure_ceilings",
    "resolve_device_kind",
    "ridge_points",
]
