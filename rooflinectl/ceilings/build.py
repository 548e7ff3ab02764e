"""Pure functions that turn detected facts, the spec table and measurements into Ceilings.

Nothing here touches a device: tests drive it with made-up GpuInfo and Measurement objects.
"""

from __future__ import annotations

import math
from typing import Any

from rooflinectl.ceilings.detect import CpuInfo, GpuInfo
from rooflinectl.ceilings.measurement import (
    KERNEL_FLOOR_KEY,
    MEMORY_LEVEL_OF,
    Measurement,
    kind_of,
)
from rooflinectl.ceilings.model import Ceilings, Roof
from rooflinectl.ceilings.specs import (
    PCIE_ASSUMED,
    RATES,
    GpuSpec,
    clock_scaled_flops_per_s,
    match_spec,
    pcie_bytes_per_s,
    rates_for,
)

FLAG_ABOVE_SPEC = 1.05  # measured / spec above this: the spec (or the timing) is wrong
FLAG_BELOW_SPEC = 0.30  # below this: throttled, shared, or a slow library path; not a roof
GPU_KERNEL_FLOOR_ESTIMATE_S = 2e-6
CPU_KERNEL_FLOOR_ESTIMATE_S = 1e-6
UNKNOWN_DRAM_GUESS_BYTES_PER_S = 1e12
# CPU estimate when nothing was measured: AVX2, two 8-lane FMA pipes, 2.5 GHz per thread.
CPU_FP32_FLOP_PER_CLOCK = 32
CPU_CLOCK_GUESS_HZ = 2.5e9
CPU_DRAM_GUESS_BYTES_PER_S = 20e9
# L1 load bandwidth per SM per clock on Volta to Hopper (NVIDIA's architecture whitepapers give
# 128 bytes/clock for the L1/shared-memory data path): the L1 estimate until --measure runs.
L1_BYTES_PER_CLOCK_PER_SM = 128
_SPEC_SOURCES = ("spec", "spec-clock-scaled")


def _roof_dict(roof: Roof) -> dict[str, Any]:
    return {"value": roof.value, "source": roof.source, "note": roof.note}


def gpu_spec_ceilings(info: GpuInfo) -> Ceilings:
    """Spec roofs for a detected GPU: clock-scaled where SMs and clock are known, else datasheet.

    An unknown name falls back to the per-SM rates of its compute capability ("estimate");
    what could not be known goes to details["missing"].
    """
    spec = match_spec(info.name)
    missing = list(info.missing)
    rates_key = spec.rates if spec else rates_for(info.compute_capability)
    if spec is None:
        missing.append(f"'{info.name}' is not in the spec table: roofs are estimates"
                       + (f" from {rates_key} per-SM rates" if rates_key else ""))
    sms = info.sms or (spec.sms if spec else None)
    clock_hz = info.max_sm_clock_hz or (spec.boost_mhz * 1e6 if spec else None)
    compute = _compute_roofs(info, spec, rates_key, sms, clock_hz)
    if not compute:
        missing.append("no compute roofs: neither the name nor the compute capability is known")
    dram = _dram_roof(info, spec, missing)
    memory = {"dram": dram, "host_pinned": host_link_roof(info, spec)}
    levels: dict[str, dict[str, Any]] = {}
    if sms and clock_hz:
        levels["l1"] = _roof_dict(Roof(sms * L1_BYTES_PER_CLOCK_PER_SM * clock_hz, "estimate",
                                       f"{sms} SMs x {L1_BYTES_PER_CLOCK_PER_SM} B/clk x {clock_hz / 1e6:.0f} MHz; "
                                       "run `rooflinectl ceilings --measure`"))
    details: dict[str, Any] = {
        "level_estimates": levels,  # memory levels without a spec figure, for the hierarchical chart
        "device": info.to_dict(),
        "spec_entry": spec.name if spec else None,
        "spec_source_url": spec.source if spec else None,
        "rates": rates_key,
        "missing": missing,
        "spec_roofs": {k: _roof_dict(r) for k, r in {**memory, **compute}.items()},
    }
    return Ceilings(
        device_name=info.name,
        device_kind="cuda",
        memory_bytes_per_s=memory,
        compute_flops_per_s=compute,
        kernel_floor_s=Roof(GPU_KERNEL_FLOOR_ESTIMATE_S, "estimate",
                            "typical empty-kernel duration; run `rooflinectl ceilings --measure`"),
        details=details,
    )


def _compute_roofs(info: GpuInfo, spec: GpuSpec | None, rates_key: str | None, sms: int | None,
                   clock_hz: float | None) -> dict[str, Roof]:
    """Per-dtype compute roofs: SMs x FLOP/clk/SM x the SM clock where both are known (the
    datasheet figure in the note), the datasheet figure where the SMs or clock were not read."""
    compute: dict[str, Roof] = {}
    clock_src = "NVML/torch max SM clock" if info.max_sm_clock_hz else "datasheet boost clock"
    for key, rate in (RATES.get(rates_key, {}) if rates_key else {}).items():
        datasheet = spec.datasheet_flops_per_s.get(key) if spec else None
        clock_mhz: float | None = None  # a datasheet figure does not say its clock
        if datasheet and not (info.sms and info.max_sm_clock_hz):
            value, source, note = datasheet, "spec", "datasheet (SM count or SM clock not read)"
        elif sms and clock_hz:
            value = clock_scaled_flops_per_s(rates_key, key, sms, clock_hz)
            note = f"{sms} SMs x {rate} FLOP/clk/SM x {clock_hz / 1e6:.0f} MHz ({clock_src})"
            if datasheet:
                note += f"; datasheet {datasheet / 1e12:.1f} TFLOP/s"
            source = ("spec-clock-scaled" if info.max_sm_clock_hz else "spec") if spec else "estimate"
            clock_mhz = clock_hz / 1e6
        else:
            continue
        compute[key] = Roof(value, source, note, clock_mhz)
    return compute


def _dram_roof(info: GpuInfo, spec: GpuSpec | None, missing: list[str]) -> Roof:
    """DRAM bandwidth: the datasheet's, else memory clock x bus width, else a placeholder (said in missing)."""
    from_clocks = info.dram_bytes_per_s_from_clocks()
    clocks_note = f"; memory clock x bus width give {from_clocks / 1e12:.2f} TB/s" if from_clocks else ""
    if spec:
        return Roof(spec.dram_bytes_per_s, "spec", f"datasheet{clocks_note}")
    if from_clocks:
        return Roof(from_clocks, "estimate", "2 x memory clock x bus width / 8")
    missing.append("DRAM bandwidth unknown: a 1 TB/s placeholder is used")
    return Roof(UNKNOWN_DRAM_GUESS_BYTES_PER_S, "estimate",
                "placeholder: neither the spec table nor the clocks could say; run --measure")


def host_link_roof(info: GpuInfo, spec: GpuSpec | None) -> Roof:
    """The host link (pinned memory, per direction): NVLink-C2C from the spec table, else the PCIe
    link NVML reports, else an assumed PCIe Gen4 x16. Pageable copies and GPU-to-GPU copies have
    no spec figure: they are measured (`ceilings --measure`) or held against this roof."""
    if spec is not None and spec.host_link_bytes_per_s:
        return Roof(spec.host_link_bytes_per_s, "spec", f"{spec.name}: NVLink-C2C to the CPU, per direction")
    if info.pcie_gen and info.pcie_width:
        value = pcie_bytes_per_s(info.pcie_gen, info.pcie_width)
        if value:
            return Roof(value, "spec", f"PCIe Gen{info.pcie_gen} x{info.pcie_width} (NVML), per direction, "
                                       "before packet overhead; run --measure")
    gen, width = PCIE_ASSUMED
    return Roof(pcie_bytes_per_s(gen, width) or 0.0, "estimate",
                f"PCIe Gen{gen} x{width} assumed (NVML could not say); run `rooflinectl ceilings --measure`")


def cpu_estimate_ceilings(cpu: CpuInfo) -> Ceilings:
    """Labelled guesses from the thread count, until `rooflinectl ceilings --measure` has run."""
    fp32 = cpu.threads * CPU_FP32_FLOP_PER_CLOCK * CPU_CLOCK_GUESS_HZ
    note = (f"{cpu.threads} threads x {CPU_FP32_FLOP_PER_CLOCK} FLOP/clk x "
            f"{CPU_CLOCK_GUESS_HZ / 1e9:.1f} GHz (AVX2 FMA assumed); run --measure")
    compute = {"simt.fp32": Roof(fp32, "estimate", note), "simt.fp64": Roof(fp32 / 2, "estimate", note)}
    memory = {"dram": Roof(CPU_DRAM_GUESS_BYTES_PER_S, "estimate",
                           "a typical desktop figure; run `rooflinectl ceilings --measure`")}
    return Ceilings(
        device_name=cpu.name,
        device_kind="cpu",
        memory_bytes_per_s=memory,
        compute_flops_per_s=compute,
        kernel_floor_s=Roof(CPU_KERNEL_FLOOR_ESTIMATE_S, "estimate", "typical per-op dispatch cost"),
        details={"device": cpu.to_dict(), "missing": [], "spec_roofs": {}},
    )


def assess(value: float | None, spec: dict[str, Any] | None) -> tuple[float | None, str]:
    """(measured / spec, flag) for one measurement against its spec roof ('' = not flagged)."""
    if value is None or not spec or spec.get("source") not in _SPEC_SOURCES or not spec.get("value"):
        return None, ""
    ratio = value / float(spec["value"])
    if ratio > FLAG_ABOVE_SPEC:
        return ratio, f"{ratio:.0%} of spec: above it (spec or timing wrong?)"
    if ratio < FLAG_BELOW_SPEC:
        return ratio, f"{ratio:.0%} of spec: throttled, shared or a slow path; not used as a roof"
    return ratio, ""


def _spec_key(key: str) -> str:
    return MEMORY_LEVEL_OF.get(key, key)


def _clock_text(clocks: dict[str, Any]) -> str:
    if not clocks:
        return "NVML saw nothing"
    parts = [f"SM {clocks['sm_clock_mhz']} MHz" if "sm_clock_mhz" in clocks else "",
             f"mem {clocks['mem_clock_mhz']} MHz" if "mem_clock_mhz" in clocks else "",
             f"{clocks['power_w']:.0f} W" if "power_w" in clocks else "",
             "throttle: " + (",".join(clocks.get("throttle_reasons") or []) or "none")]
    return ", ".join(p for p in parts if p)


def measured_clock_mhz(clocks: dict[str, Any]) -> float | None:
    """The SM clock NVML read while a figure was measured; None when it was not read, or read
    while the GPU sat idle (then it says nothing of the clock the work ran at)."""
    value = clocks.get("sm_clock_mhz")
    if not value or "gpu_idle" in (clocks.get("throttle_reasons") or []):
        return None
    return float(value)


def apply_link(ceilings: Ceilings, measurements: list[Measurement]) -> list[dict[str, Any]]:
    """The link roof from `link.*` measurements: the best all-reduce bus bandwidth measured
    between the local GPUs (source measured), its curve over message sizes and the topology seen
    in details["link"]; the rows the measurements table lists."""
    rows = []
    link = dict(ceilings.details.get("link") or {})
    for m in measurements:
        rows.append({**m.to_dict(), "ratio_to_spec": None, "flag": "", "used_as_roof": False})
        if m.key == "link.topology":
            link["topology"] = m.details
        elif m.key == "link.all_reduce" and m.value is not None and math.isfinite(m.value) and m.value > 0:
            ceilings.link_bytes_per_s["intra_node"] = Roof(m.value, "measured", m.method)
            link.update({k: m.details[k] for k in ("gpus", "collective", "sizes_bytes", "bus_bytes_per_s")
                         if k in m.details})
            rows[-1]["used_as_roof"] = True
    if link:
        ceilings.details["link"] = link
    return rows


def apply_compute(ceilings: Ceilings, m: Measurement) -> bool:
    """A measured compute peak is the achievable line; it becomes the roof only where no spec
    roof is known, or where it beats the spec roof (both at one clock): the roof must be a
    ceiling, and a library's best over a few shapes is not one (a GEMM of another shape or layout
    ran at 109% of a measured bf16 roof on the H200). True when it is the roof."""
    assert m.value is not None
    achievable = Roof(m.value, "measured", m.method, measured_clock_mhz(m.clocks))
    ceilings.achievable_flops_per_s[m.key] = achievable
    spec = ceilings.compute_flops_per_s.get(m.key)
    rated = spec is not None and (spec.source in _SPEC_SOURCES or (spec.source == "estimate" and spec.clock_mhz))
    if rated:  # per-SM rates x SMs x clock (an unknown GPU's estimate too); a CPU's guess is no spec
        assert spec is not None
        at_spec_clock = m.value
        if spec.clock_mhz and achievable.clock_mhz:
            at_spec_clock = m.value * spec.clock_mhz / achievable.clock_mhz
        if at_spec_clock <= spec.value:
            return False
    ceilings.compute_flops_per_s[m.key] = achievable
    return True


def apply_measurements(ceilings: Ceilings, measurements: list[Measurement], *,
                       measured_at: str = "") -> Ceilings:
    """Measured memory figures and the kernel floor replace spec roofs, except flagged-low ones;
    measured compute peaks are the achievable line (apply_compute); each is listed in details.

    The DRAM roof is the best of read, copy and write: the roof must sit above every kernel,
    and a write-only kernel can beat a read-only one. The link roof: apply_link.
    """
    spec_roofs = ceilings.details.get("spec_roofs", {})
    rows: list[dict[str, Any]] = apply_link(ceilings, [m for m in measurements if kind_of(m.key) == "link"])
    best_memory: dict[str, tuple[float, str]] = {}
    for m in measurements:
        if kind_of(m.key) == "link":
            continue
        spec = spec_roofs.get(_spec_key(m.key))
        ratio, flag = assess(m.value, spec)
        row = {**m.to_dict(), "ratio_to_spec": ratio, "flag": flag, "used_as_roof": False}
        if flag:
            row["flag"] = f"{flag} [{_clock_text(m.clocks)}]"
        rows.append(row)
        usable = m.value is not None and math.isfinite(m.value) and m.value > 0
        if not usable or (ratio is not None and ratio < FLAG_BELOW_SPEC):
            continue
        kind = kind_of(m.key)
        row["used_as_roof"] = True
        if kind == "memory":
            level = MEMORY_LEVEL_OF[m.key]
            if m.value > best_memory.get(level, (0.0, ""))[0]:
                best_memory[level] = (m.value, m.key)
        elif kind == "compute":
            row["used_as_roof"] = apply_compute(ceilings, m)
        elif m.key == KERNEL_FLOOR_KEY:
            ceilings.kernel_floor_s = Roof(m.value, "measured", m.method)
        else:
            row["used_as_roof"] = False
    for level, (value, key) in best_memory.items():
        ceilings.memory_bytes_per_s[level] = Roof(value, "measured", f"best of measured: {key}")
    for row in rows:
        if kind_of(row["key"]) == "memory" and row["used_as_roof"]:
            row["used_as_roof"] = best_memory.get(MEMORY_LEVEL_OF[row["key"]], (0, ""))[1] == row["key"]
    ceilings.details["measurements"] = rows
    ceilings.details["measured_at"] = measured_at
    return ceilings


def ridge_points(ceilings: Ceilings) -> list[dict[str, Any]]:
    """Where each compute roof meets each memory roof: intensity = FLOP/s / (bytes/s), FLOP/byte."""
    out = []
    for ckey, croof in sorted(ceilings.compute_flops_per_s.items()):
        for mkey, mroof in sorted(ceilings.memory_bytes_per_s.items()):
            if croof.value > 0 and mroof.value > 0:
                out.append({"compute": ckey, "memory": mkey,
                            "intensity_flop_per_byte": croof.value / mroof.value})
    return out
