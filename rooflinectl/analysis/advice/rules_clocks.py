"""Rules about the GPU itself during the run (NVML samples): capped clocks, and other processes."""

from __future__ import annotations

from rooflinectl.analysis.advice.registry import AdviceContext, Finding, make_finding, rule
from rooflinectl.profile_sections import Clocks
from rooflinectl.units import percent, seconds, si

MIN_CAPPED_SHARE = 0.05  # share of kernel time under a power or thermal cap from which the rule speaks


def _sampled(ctx: AdviceContext) -> Clocks | None:
    clocks = ctx.summary.get("clocks")
    return clocks if isinstance(clocks, dict) and clocks.get("status") == "sampled" else None


@rule(id="clocks.throttled", title="The GPU capped its clocks (power or thermal limit)", severity="warning")
def throttled(ctx: AdviceContext) -> list[Finding]:
    """NVML reported a power or thermal cap (sw_power_cap, hw_slowdown, sw/hw thermal slowdown,
    hw power brake, board limit) during at least 5% of the kernel time: the GPU lowered its SM
    clock, so compute-bound kernels ran slower than the same code on a GPU within its limits.
    The roofs in the table already follow the clock sampled during each kernel.

    Estimate: compute-bound work takes time in proportion to 1 / SM clock, so each compute-bound
    launch would save its time under the cap x (1 - its clock / the device's max SM clock)
    (summary clocks cap_cost_s); memory-bound work is not counted.
    """
    clocks = _sampled(ctx)
    if clocks is None:
        return []
    kernel_s = float(clocks.get("kernel_time_s") or 0.0)
    capped_s = float(clocks.get("capped_kernel_s") or 0.0)
    if kernel_s <= 0 or capped_s / kernel_s < MIN_CAPPED_SHARE:
        return []
    reasons = {k: v for k, v in (clocks.get("throttle_kernel_s") or {}).items()
               if k not in ("sync_boost", "applications_clocks_setting", "display_clock_setting")}
    named = ", ".join(f"{k} {percent(v / kernel_s, 0)}" for k, v in sorted(reasons.items(), key=lambda kv: -kv[1]))
    sm = clocks.get("sm_clock_mhz") or {}
    power = clocks.get("power_w") or {}
    cost_s = float(clocks.get("cap_cost_s") or 0.0)
    rows = tuple(int(r) for r, _ in clocks.get("cap_cost_by_row") or [])
    thermal = any("thermal" in k for k in reasons)
    fix = ("Improve cooling or airflow (the GPU slowed to stay under its temperature limit)" if thermal else
           "The GPU ran at its power limit: check it with `nvidia-smi -q -d POWER` (raise it with `nvidia-smi -pl` "
           "if below the board's default)")
    return [make_finding(
        "clocks.throttled",
        evidence=(f"NVML reported {named} of {seconds(kernel_s, decimals=2)} kernel time; SM clock "
                  f"{sm.get('mean', 0):,.0f} MHz mean (min {sm.get('min', 0):,.0f}) of {clocks.get('max_sm_clock_mhz') or 0:,.0f} MHz"
                  + (f"; power {power.get('mean', 0):.0f} W mean, {power.get('max', 0):.0f} W peak of a "
                     f"{clocks.get('power_limit_w') or 0:.0f} W limit" if power else "")
                  + f". Compute-bound kernels lost about {seconds(cost_s, decimals=2)} to the lower clock."),
        recommendation=(f"{fix}. Compare benchmark runs only at the same clocks (for timing studies, lock them: "
                        "`nvidia-smi -lgc`); lower-precision math (bf16, fp8) does the same work for less power."),
        est_saving_s=cost_s,
        rows=rows,
        numbers={"capped_kernel_s": capped_s, "kernel_time_s": kernel_s, "cap_cost_s": cost_s,
                 "sm_clock_mean_mhz": float(sm.get("mean") or 0.0)},
        subject="GPU clocks",
    )]


@rule(id="gpu.shared", title="Another process used the GPU: timings are not trustworthy", severity="warning",
      keep_severity=True)
def shared(ctx: AdviceContext) -> list[Finding]:
    """NVML saw other processes on the GPU during the run (their memory, or SM utilisation by
    another PID): kernels may have waited for or shared the SMs with someone else's, so times,
    efficiencies and every estimate in this report may be off by any amount. In a container where
    NVML lists host PIDs, each listed process beyond one is counted as another.

    Estimate: none (a warning about the data, not a fix); never downgraded for its small saving.
    """
    clocks = _sampled(ctx)
    others = (clocks or {}).get("other_processes") or {}
    count = int(others.get("count") or 0)
    if not count:
        return []
    used = float(others.get("used_bytes") or 0.0)
    sm = float(others.get("sm_util_max_pct") or 0.0)
    return [make_finding(
        "gpu.shared",
        evidence=(f"NVML saw {count} other process(es) on the GPU"
                  + (f" holding {si(used, 'B')}" if used else "")
                  + (f", up to {sm:.0f}% SM utilisation" if sm else "") + " while this run was profiled."),
        recommendation="Profile on a GPU nothing else uses (`nvidia-smi` lists its processes), then compare.",
        est_saving_s=0.0,
        numbers={"other_processes": float(count), "used_bytes": used, "sm_util_max_pct": sm},
        subject="shared GPU",
    )]
