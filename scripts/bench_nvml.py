"""NVML during the run, on the GPU machine: what the sampler saw, and what it costs (scripts/gpu.d/70-nvml.sh).

Usage: python3 scripts/bench_nvml.py OUT_DIR [NAME=PROFILE.json ...]
- Cost: two workloads profiled with the sampler on (every 20 ms, the default) and off
  (ROOFLINECTL_NVML_PERIOD_S=0), alternating, REPEATS each: kernel time as the profile counts it
  and the counted window's wall time, medians; "cost" is on / off - 1 (target: within the 3%
  distortion budget of docs/benchmarks/foundation.md). Also the time one sample takes
  (NvmlSampler.sample() called 500 times).
- Seen: for each NAME=PROFILE given, the profile's summary "clocks" and its clocks advice.
Writes OUT_DIR/nvml.json and OUT_DIR/nvml.md (the lead copies the latter to docs/benchmarks/nvml.md).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch
from bench_foundation import mlp_workload  # scripts/ is first on sys.path when run as a script

from rooflinectl.analysis.advice import Thresholds, advise
from rooflinectl.attribution.join import attribute
from rooflinectl.capture.run.nvml_sampler import PERIOD_ENV, NvmlSampler
from rooflinectl.capture.run.runner import profile_calls
from rooflinectl.outputs.profile_file import load_profile

REPEATS = 5


def launch_workload(launches: int = 100):
    """Launch-bound: tiny in-place adds, the host thread the sampler could disturb most."""
    t = torch.zeros(1, device="cuda")

    def step() -> None:
        for _ in range(launches):
            t.add_(1)
    return step


def one_run(fn, iters: int, period: str) -> dict[str, float]:
    os.environ[PERIOD_ENV] = period
    capture = profile_calls(fn, (), {}, warmup=0, iters=iters, device_kind="cuda")
    attributed = attribute(capture.trace, "cuda", capture.metadata)
    launches = attributed.launches
    kernels = launches.loc[~launches["kernel"].str.startswith(("Memset", "Memcpy")), "time_s"]
    nvml = capture.metadata.get("nvml") or {}
    samples = len(((nvml.get("devices") or [{}])[0].get("samples") or {}).get("t_ns") or [])
    return {"kernel_s": float(kernels.sum()), "window_s": attributed.window_s, "samples": samples}


def sampler_cost(name: str, fn, iters: int) -> dict[str, Any]:
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    runs: dict[str, list[dict[str, float]]] = {"on": [], "off": []}
    for _ in range(REPEATS):
        runs["off"].append(one_run(fn, iters, "0"))
        runs["on"].append(one_run(fn, iters, "0.02"))
    os.environ.pop(PERIOD_ENV, None)
    med = {mode: {k: statistics.median(r[k] for r in rs) for k in ("kernel_s", "window_s", "samples")}
           for mode, rs in runs.items()}
    out = {"workload": name, "iters": iters, "repeats": REPEATS, "median": med, "runs": runs,
           "kernel_cost": med["on"]["kernel_s"] / med["off"]["kernel_s"] - 1.0,
           "window_cost": med["on"]["window_s"] / med["off"]["window_s"] - 1.0}
    print(f"{name}: kernel time off {med['off']['kernel_s'] * 1e3:.3f} ms, on {med['on']['kernel_s'] * 1e3:.3f} ms "
          f"({out['kernel_cost']:+.2%}); window off {med['off']['window_s'] * 1e3:.1f} ms, on "
          f"{med['on']['window_s'] * 1e3:.1f} ms ({out['window_cost']:+.2%}); {med['on']['samples']:.0f} samples")
    return out


def sample_time_us(count: int = 500) -> float | None:
    sampler = NvmlSampler(torch.cuda.current_device())
    if sampler.open() is not None:
        return None
    start = time.perf_counter()
    for i in range(count):
        sampler.sample(with_processes=i % 25 == 0)
    elapsed = time.perf_counter() - start
    sampler.stop()
    return elapsed / count * 1e6


def seen(name: str, path: str) -> dict[str, Any]:
    data = load_profile(path)
    report = advise(data, Thresholds())
    findings = [f.to_dict() for f in report.findings if f.rule_id in ("clocks.throttled", "gpu.shared")]
    return {"name": name, "path": path, "command": data.metadata.get("command"), "clocks": data.summary.get("clocks"),
            "total_kernel_time_s": data.summary.get("total_kernel_time_s"), "window_s": data.summary.get("window_s"),
            "findings": findings}


def _f(value: Any, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def markdown(results: dict[str, Any]) -> str:
    lines = ["# NVML during the run: clocks, power, throttling, and the sampler's cost\n",
             f"Printed by `scripts/bench_nvml.py` (run by `scripts/gpu.d/70-nvml.sh`) on {results['device']}, "
             f"torch {results['torch']}, driver {results.get('driver') or '?'}, {results['date']}.\n",
             "## What the sampler saw\n",
             "| profile | samples | SM clock mean (min-max) while kernels ran | memory clock | power mean / peak / limit "
             "| max temp | clocks-event reasons (share of kernel time) | compute roof moved |",
             "| --- | ---: | --- | --- | --- | ---: | --- | --- |"]
    for s in results["seen"]:
        c = s["clocks"] or {}
        if c.get("status") != "sampled":
            lines.append(f"| {s['name']} | not sampled: {c.get('message')} | | | | | | |")
            continue
        sm, mem, power = c.get("sm_clock_mhz") or {}, c.get("mem_clock_mhz") or {}, c.get("power_w") or {}
        kernel_s = c.get("kernel_time_s") or 0.0
        reasons = ", ".join(f"{k} {v / kernel_s:.0%}" for k, v in sorted((c.get("throttle_kernel_s") or {}).items(),
                                                                          key=lambda kv: -kv[1])) or "none"
        shifts = ", ".join(f"{r['roof']} {r['peak_change']:+.1%}" for r in c.get("roof_shifts") or []) or "-"
        lines.append(f"| {s['name']} | {c.get('samples')} | {_f(sm.get('mean'), ',.0f')} ({_f(sm.get('min'), ',.0f')}-"
                     f"{_f(sm.get('max'), ',.0f')}) MHz | {_f(mem.get('mean'), ',.0f')} MHz | {_f(power.get('mean'), '.0f')}"
                     f" / {_f(power.get('max'), '.0f')} / {_f(c.get('power_limit_w'), '.0f')} W | "
                     f"{_f(c.get('temperature_c_max'), '.0f')} C | {reasons} | {shifts} |")
    for s in results["seen"]:
        for f in s["findings"]:
            lines.append(f"\n{s['name']}: **{f['rule_id']}** ({f['severity']}): {f['evidence']} "
                         f"Estimated cost: {f['est_saving_s'] * 1e3:.1f} ms.")
    lines += ["\n## What the sampler costs the kernels it watches (target: within 3%)\n",
              f"Each workload profiled {REPEATS} times with the sampler on (every 20 ms) and {REPEATS} times off, "
              "alternating; medians. Kernel time as the profile counts it; window: the counted window's wall time.\n",
              "| workload | iterations | kernel time off | on | cost | window off | on | cost | samples per run |",
              "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in results["cost"]:
        off, on = r["median"]["off"], r["median"]["on"]
        lines.append(f"| {r['workload']} | {r['iters']} | {off['kernel_s'] * 1e3:.3f} ms | {on['kernel_s'] * 1e3:.3f} ms | "
                     f"{r['kernel_cost']:+.2%} | {off['window_s'] * 1e3:.1f} ms | {on['window_s'] * 1e3:.1f} ms | "
                     f"{r['window_cost']:+.2%} | {on['samples']:.0f} |")
    us = results.get("sample_us")
    lines.append(f"\nOne sample (clocks, power, temperature, utilisation, reasons; the process list every 25th): "
                 f"{_f(us, '.1f')} us of the sampling thread's time.")
    return "\n".join(lines) + "\n"


def main(out_dir: str, profiles: list[str]) -> None:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    import pynvml

    try:
        pynvml.nvmlInit()
        driver = pynvml.nvmlSystemGetDriverVersion()
        pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 - the report says "?"
        driver = None
    results: dict[str, Any] = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "driver": driver,
                               "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="minutes")}
    results["seen"] = [seen(*p.split("=", 1)) for p in profiles]
    results["sample_us"] = sample_time_us()
    results["cost"] = [sampler_cost("bf16 MLP 4096 -> 16384 -> 4096 (GEMM-bound)", mlp_workload()[0], 300),
                       sampler_cost("100 one-element adds per call (launch-bound)", launch_workload(), 60)]
    (out / "nvml.json").write_text(json.dumps(results, indent=1, default=str))
    (out / "nvml.md").write_text(markdown(results))
    print(markdown(results))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "out", sys.argv[2:])
