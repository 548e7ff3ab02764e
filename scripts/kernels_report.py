"""Turn `rooflinectl kernels --format json` output into the rows of docs/benchmarks/kernels.md.

Usage: python3 scripts/kernels_report.py kernels.json > kernels.md
Every figure comes from the JSON (which the command measured); this script only lays it out and
compares each reference kernel with its target from the reference kernel registry (carried in the JSON).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from rooflinectl.units import percent, seconds, si


def _figure(variant: dict[str, Any]) -> str:
    """The achieved rate that matters: bytes/s when DRAM is the roof, FLOP/s otherwise."""
    if variant.get("roof") == "dram":
        return si(variant.get("achieved_bytes_per_s"), "B/s")
    return si(variant.get("achieved_flops_per_s"), "FLOP/s")


def _roof(variant: dict[str, Any]) -> str:
    roof = variant.get("roof")
    if roof in (None, "-"):
        return "-"
    value = si(variant.get("roof_value"), "B/s" if roof == "dram" else "FLOP/s")
    return f"{'DRAM' if roof == 'dram' else roof} {value} ({variant.get('roof_source', '?')})"


def _target(spec: dict[str, Any], variant: dict[str, Any]) -> tuple[str, str]:
    target = spec.get("target")
    if not target or variant["role"] != "kernel":
        return "", ""
    value = variant.get("efficiency") if target["metric"] == "roof" else variant.get("vs_library")
    if value is None:
        return target["text"], "no figure"
    shown = percent(value) if target["metric"] == "roof" else f"{value:.2f}x"
    return target["text"], f"{shown}: {'met' if value >= target['threshold'] else '**not met**'}"


def _measured(report: dict[str, Any], key: str) -> float | None:
    for row in report.get("roofs", {}).get("measurements", []):
        if row.get("key") == key and row.get("value"):
            return float(row["value"])
    return None


def render(report: dict[str, Any]) -> str:
    roofs = report["roofs"]
    sources = roofs.get("sources", {})
    dram = roofs["memory_bytes_per_s"].get("dram")
    lines = [
        f"## {report['device_name']}, {report['created']} (--size {report['size']})",
        "",
        f"rooflinectl {report['tool_version']}, torch {report.get('torch')}, triton {report.get('triton')}, "
        f"CUDA {report.get('cuda')}. DRAM roof {si(dram, 'B/s')} ({sources.get('dram', '?')})"
        + "".join(f"; {key} {si(_measured(report, key), 'B/s')}" for key in ("dram.read", "dram.copy", "dram.write")
                  if _measured(report, key)) + ". "
        + ", ".join(f"{k} {si(v, 'FLOP/s')} ({sources.get(k, '?')})"
                    for k, v in sorted(roofs["compute_flops_per_s"].items()) if k in ("tensor.bf16", "tensor.fp16",
                                                                                      "simt.fp32")) + ".",
        "",
        "| reference kernel | variant | shape | time | achieved | % of roof | roof | vs library | check | target | result |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    copy_bw = _measured(report, "dram.copy")
    notes = []
    for spec in report["kernels"]:
        for variant in spec["variants"]:
            check = variant.get("check") or {}
            differs = "differs" if variant["kind"] == "torch" else "MISMATCH"  # torch's own numerics: reported only
            status = "failed" if variant.get("error") else ("ok" if check.get("ok") else differs)
            target, result = _target(spec, variant)
            vs = variant.get("vs_library")
            lines.append(" | ".join([
                f"| {spec['name']}", variant["variant"] + (" (library)" if variant["role"] == "library" else ""),
                variant.get("shapes", ""), seconds(variant.get("time_s")), _figure(variant),
                percent(variant.get("efficiency")), _roof(variant),
                "-" if variant["role"] == "library" or vs is None else f"{vs:.2f}x", status, target, result,
            ]) + " |")
            if variant.get("error"):
                notes.append(f"- {spec['name']} / {variant['variant']}: {variant['error']}")
            if variant.get("own_bytes") is not None and variant.get("bytes"):
                notes.append(f"- {spec['name']} / {variant['variant']}: held to the op's minimum "
                             f"({si(variant['bytes'], 'B')}); its kernels declare {si(variant['own_bytes'], 'B')} "
                             f"({variant['own_bytes'] / variant['bytes']:.2f}x) and move them at "
                             f"{percent(variant.get('own_efficiency'))} of the roof")
            for tune in variant.get("autotune") or []:
                timed = sorted(tune.get("timings_s") or [], key=lambda ct: ct[1])
                if timed:
                    notes.append(f"- {spec['name']} / {variant['variant']}: autotune "
                                 + "; ".join(f"{' '.join(f'{k}={v}' for k, v in c.items())}: {seconds(t)}"
                                             for c, t in timed))
            if spec["family"] == "copy" and variant["role"] != "library" and copy_bw and variant.get(
                    "achieved_bytes_per_s"):
                notes.append(f"- {spec['name']} / {variant['variant']}: {percent(variant['achieved_bytes_per_s'] / copy_bw)}"
                             f" of the measured copy bandwidth (dram.copy {si(copy_bw, 'B/s')})")
    return "\n".join(lines + ([""] + notes if notes else [])) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path, help="output of rooflinectl kernels --format json")
    args = parser.parse_args(argv)
    try:
        report = json.loads(args.report.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        print(f"kernels_report: cannot read {args.report}: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
