"""Estimated vs measured saving of each example's fix: reads what scripts/gpu.d/50-advice.sh
wrote under OUT and writes OUT/advice.md.

python scripts/advice_report.py OUT --steps 5 fp32_mlp=precision.fp32-matmul ...
Estimated: the expected rule's est_saving_s in the before-profile, per profiled step.
Verified: what `advise --verify` measured for that finding (OUT/NAME.before.verify.json, when the
piece ran it): the rebuilt op timed as profiled and fixed, per profiled step.
Measured: median step time before - after (CUDA events, `--time` mode of the example), and the
profiles' window per step before - after (the profiler's own clock).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from pathlib import Path
from typing import Any


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None


def timing_ms(path: Path) -> float | None:
    try:
        line = path.read_text(encoding="utf-8").strip().splitlines()[-1]
        return float(json.loads(line.removeprefix("TIMING "))["step_ms"])
    except (OSError, IndexError, ValueError, KeyError):
        return None


def window_ms(path: Path, steps: int) -> float | None:
    data = read_json(path)
    if not data:
        return None
    summary = data.get("summary", {})
    window = summary.get("window_s") or summary.get("total_kernel_time_s")
    return None if window is None else 1e3 * float(window) / steps


def fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def verified_ms(out: Path, name: str, rule: str, steps: int) -> tuple[float | None, str, str | None]:
    """(the saving --verify measured for the rule's findings per step, its status, the first
    check's detail) or (None, why not, None)."""
    report = read_json(out / f"{name}.before.verify.json")
    checks = [f.get("verification") or {} for f in (report or {}).get("findings", []) if f["rule_id"] == rule]
    measured = [c["measured_saving_s"] for c in checks if c.get("status") in ("gain", "no-gain")]
    if not checks:
        return None, "not run" if report is None else "no finding", None
    status = "/".join(sorted({c.get("status", "?") for c in checks}))
    detail = next((c["detail"] for c in checks if c.get("detail")), None)
    return (1e3 * sum(measured) / steps if measured else None), status, detail


def row(out: Path, name: str, rule: str, steps: int) -> tuple[str, str]:
    before, after = read_json(out / f"{name}.before.advice.json"), read_json(out / f"{name}.after.advice.json")
    found = [f for f in (before or {}).get("findings", []) if f["rule_id"] == rule]
    left = [f for f in (after or {}).get("findings", []) if f["rule_id"] == rule]
    est_ms = 1e3 * sum(f["est_saving_s"] for f in found) / steps if found else None
    verify_ms, verify_status, verify_detail = verified_ms(out, name, rule, steps)
    t_before, t_after = timing_ms(out / f"{name}.before.timing"), timing_ms(out / f"{name}.after.timing")
    measured = t_before - t_after if t_before is not None and t_after is not None else None
    w_before = window_ms(out / f"{name}.before.profile.json", steps)
    w_after = window_ms(out / f"{name}.after.profile.json", steps)
    w_measured = w_before - w_after if w_before is not None and w_after is not None else None
    ratio = est_ms / measured if est_ms is not None and measured and measured > 0 else None
    verdict = "-" if ratio is None else ("ok" if 0.5 <= ratio <= 2 else "off by > 2x")
    verify_ratio = verify_ms / measured if verify_ms is not None and measured and measured > 0 else None
    speedup = t_before / t_after if t_before and t_after else None
    line = (f"| {name} | `{rule}` | {'yes' if found else 'NO'} | {'no' if not left else 'still'} | "
            f"{fmt(t_before)} | {fmt(t_after)} | {fmt(speedup, 2)}x | {fmt(est_ms)} | "
            f"{fmt(verify_ms)} ({verify_status}) | {fmt(measured)} | {fmt(w_measured)} | {fmt(ratio, 2)} ({verdict}) | "
            f"{fmt(verify_ratio, 2)} |")
    evidence = found[0]["evidence"] if found else "(expected finding not produced)"
    return line, f"- **{name}**: {evidence}" + (f" --verify: {verify_detail}" if verify_detail else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out", type=Path)
    parser.add_argument("--steps", type=int, required=True, help="steps each profile counted")
    parser.add_argument("pairs", nargs="+", help="example=rule_id")
    args = parser.parse_args()
    device = "?"
    first = read_json(args.out / f"{args.pairs[0].split('=')[0]}.before.profile.json")
    if first:
        device = first.get("ceilings", {}).get("device_name", "?")
    lines = [f"# Advice: estimated vs measured saving ({device}, {dt.date.today().isoformat()})", "",
             "Per step. Estimated: the expected rule's saving in the before-profile / steps profiled. "
             "--verify: the saving `advise --verify` measured on the rebuilt op (its speed-up applied to the "
             "profiled time; for gemm.batch-small, the rebuilt loop's time less one bmm's, once per run) / steps "
             "profiled. Measured: median step time (CUDA events) before - after the fix; "
             "also the profiles' window per step before - after. Ratios are to the measured step saving.", "",
             "| example | rule | found before | after fix | before ms | after ms | speed-up | est. saving ms | "
             "--verify ms | measured ms | window saving ms | est/measured | verify/measured |",
             "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|"]
    notes = ["", "Evidence from the before-profiles:", ""]
    for pair in args.pairs:
        name, rule = pair.split("=", 1)
        line, note = row(args.out, name, rule, args.steps)
        lines.append(line)
        notes.append(note)
    (args.out / "advice.md").write_text("\n".join(lines + notes) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
