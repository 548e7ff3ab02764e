"""Compare a `rooflinectl ceilings --measure --format json` result with reference figures.

Usage: python3 scripts/bench_ceilings.py ceilings.json  -> a markdown table on stdout.
The references are the H200 figures measured by other means (../shared/H200.md, 2026-11-29);
the issue's target is each measured ceiling at >= 97% of them. Other GPUs: the table only.
"""

from __future__ import annotations

import json
import sys

TARGET_RATIO = 0.97
H200_REFERENCE = {  # key -> (figure, unit, what was measured by other means)
    "dram.read": (4.28e12, "B/s", "x.sum over 2 GiB"),
    "dram.copy": (4.24e12, "B/s", "device-to-device copy 2 GiB"),
    "tensor.bf16": (768e12, "FLOP/s", "cuBLAS bf16 8192^3"),
    "tensor.fp8": (1399e12, "FLOP/s", "torch._scaled_mm e4m3 8192^3"),
    "simt.fp32": (66.0e12, "FLOP/s", "Triton fp32 FMA loop"),
}


def main(path: str) -> int:
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)["ceilings"]
    details = data["details"]
    rows = {r["key"]: r for r in details.get("measurements", [])}
    print(f"Device: {data['device_name']}; measured {details.get('measured_at')}; "
          f"identity {json.dumps(details.get('identity'))}\n")
    print("| measurement | value | % of spec | used as roof | method | flag |")
    print("| --- | --- | --- | --- | --- | --- |")
    for key, row in rows.items():
        value = row.get("value")
        if value is None:
            shown = "-"
        elif row.get("unit") == "s":
            shown = f"{value * 1e6:.3g} us"
        else:
            unit = "TB/s" if row.get("unit") == "bytes/s" else ("TOP/s" if "int8" in key else "TFLOP/s")
            shown = f"{value / 1e12:.4g} {unit}"
        ratio = row.get("ratio_to_spec")
        print(f"| {key} | {shown} | {'-' if ratio is None else f'{ratio:.1%}'} | "
              f"{'yes' if row.get('used_as_roof') else ''} | {row.get('method') or row.get('note')} | "
              f"{row.get('flag') or ''} |")
    failed = 0
    if "H200" in data["device_name"]:
        print(f"\nTargets (>= {TARGET_RATIO:.0%} of the H200 reference figures):\n")
        print("| measurement | measured | reference | ratio | met |")
        print("| --- | --- | --- | --- | --- |")
        for key, (ref, unit, what) in H200_REFERENCE.items():
            value = (rows.get(key) or {}).get("value")
            ratio = None if value is None else value / ref
            met = ratio is not None and ratio >= TARGET_RATIO
            failed += not met
            shown = "-" if value is None else f"{value / 1e12:.4g} T{unit}"
            print(f"| {key} | {shown} | {ref / 1e12:.4g} T{unit} ({what}) | "
                  f"{'-' if ratio is None else f'{ratio:.1%}'} | {'yes' if met else 'NO'} |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
