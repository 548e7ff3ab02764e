"""The advice checks of issue 30 on real profiles (scripts/gpu.d/73-advice.sh), as FIGURE and
CHECK lines.

python scripts/advice_check.py report NAME=PROFILE ... [--verify | --verify-only] [--json OUT]
    per profile: findings shown by default (actions, notes), all findings and instances (--all),
    duplicates among the shown (same rule and pattern), whether every note comes after every
    action; with --verify, `advise --verify`'s measurement of each warning-level finding.
python scripts/advice_check.py compare --report OUT --name NAME --rule RULE [--subject TEXT]
        --before TIMING --after TIMING [--iterations N]
    end to end: the step time saved by applying the fix to the model (two TIMING files) against
    the verified saving per iteration of the findings of RULE (whose subject holds TEXT).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from typing import Any

from rooflinectl.analysis.advice import Thresholds, advise
from rooflinectl.analysis.advice.merge import is_note, normalised
from rooflinectl.outputs.profile_file import load_profile

TOLERANCE = 0.30  # an end-to-end saving agrees with the verified one within +-30%


def _iterations(data: Any) -> float:
    value = (data.summary or {}).get("iterations") or (data.metadata or {}).get("iterations") or 1
    return float(value)


def shown_figures(name: str, data: Any) -> dict[str, Any]:
    """What a person sees by default, and what --all counts."""
    report = advise(data)
    every = advise(data, Thresholds(max_findings=0, max_findings_per_rule=0, hide_below_share=0.0))
    kinds = [is_note(f) for f in report.findings]
    keys = Counter((f.rule_id, normalised(f.subject)) for f in report.findings)
    figures = {
        "shown": len(report.findings), "actions": kinds.count(False), "notes": kinds.count(True),
        "findings": len(report.findings) + len(report.left_out), "instances": report.instances,
        "all_findings": len(every.findings), "all_instances": every.instances,
        "duplicates": sum(n - 1 for n in keys.values()),
        "notes_after_actions": kinds == sorted(kinds),
        "merged": [[f.rule_id, f.subject[:70], f.count] for f in report.findings if f.count > 1],
        "top": [[f.rule_id, f.subject[:60], round(f.est_saving_s * 1e3, 3), f.count, f.severity]
                for f in report.findings],
    }
    print(f"FIGURE advice {name}: {figures['shown']} shown ({figures['actions']} actions, {figures['notes']} notes) "
          f"of {figures['findings']} findings ({figures['instances']} instances); --all: {figures['all_findings']} "
          f"findings of {figures['all_instances']} instances; duplicates among shown {figures['duplicates']}; "
          f"notes after actions: {figures['notes_after_actions']}")
    print(f"FIGURE advice {name} merged: {json.dumps(figures['merged'])}")
    print(f"FIGURE advice {name} shown: {json.dumps(figures['top'])}")
    ok = figures["shown"] <= 10 and figures["duplicates"] == 0 and figures["notes_after_actions"]
    print(f"CHECK advice {name}: " + ("ok" if ok else "FAILED: more than 10 shown, a duplicate, or a note before an action"))
    return {"figures": figures, "report": report}


def verify_figures(name: str, data: Any, report: Any, markdown_dir: str | None = None) -> list[dict[str, Any]]:
    """--verify on the default report: each warning-level finding's measurement (and the report as
    `advise --verify --format markdown` writes it, in markdown_dir)."""
    from rooflinectl.outputs.advice_render import render_text
    from rooflinectl.verify import verify_report

    warnings = {id(f) for f in report.findings if f.severity in ("warning", "error")}
    subjects = {(f.rule_id, f.subject) for f in report.findings if id(f) in warnings}
    verified = verify_report(report, data)
    if markdown_dir:
        with open(f"{markdown_dir}/{name}.verify.md", "w", encoding="utf-8") as handle:
            handle.write(render_text(verified, "markdown"))
    iterations = _iterations(data)
    out = []
    for f in verified.findings:
        v = f.verification
        row = {"rule": f.rule_id, "subject": f.subject, "count": f.count, "est_saving_s": f.est_saving_s,
               "status": v.status if v else "no verifier", "detail": v.detail if v else "",
               "measured_saving_s": v.measured_saving_s if v else None,
               "original_s": v.original_s if v else None, "fixed_s": v.fixed_s if v else None,
               "iterations": iterations, "warning": (f.rule_id, f.subject) in subjects}
        out.append(row)
        if not row["warning"]:
            continue
        measured = "-" if row["measured_saving_s"] is None else f"{row['measured_saving_s'] * 1e3:.3f} ms"
        print(f"FIGURE verify {name} {f.rule_id} [{f.subject[:60]}] x{f.count}: {row['status']}; est "
              f"{f.est_saving_s * 1e3:.3f} ms, measured {measured} over {iterations:g} iterations; {row['detail'][:300]}")
    print(measurement_check(name, out))
    return out


def measurement_check(name: str, rows: list[dict[str, Any]]) -> str:
    """The CHECK line: a warning-level finding counts as measured only when --verify timed it
    (gain or no gain); "not-run" (a rebuild refused, the budget spent) and no verifier do not, and
    each one is named with its reason."""
    warnings = [r for r in rows if r["warning"]]
    missing = [r for r in warnings if r["status"] not in ("gain", "no-gain")]
    named = "; ".join(f"{r['rule']} [{r['subject'][:50]}]: {r['status']}" + (f" ({r['detail'][:160]})" if r["detail"] else "")
                      for r in missing)
    return (f"CHECK verify {name}: {len(warnings)} warning-level findings, {len(missing)} without a measurement"
            + (f": FAILED: {named}" if missing else ": ok"))


def report_main(args: argparse.Namespace) -> int:
    results: dict[str, Any] = {}
    for pair in args.profiles:
        name, _, path = pair.partition("=")
        try:
            data = load_profile(path)
        except Exception as exc:  # noqa: BLE001 - one missing profile must not stop the others
            print(f"CHECK advice {name}: FAILED: cannot load {path}: {exc}")
            continue
        if args.verify_only:
            shown = {"figures": None, "report": advise(data)}
        else:
            shown = shown_figures(name, data)
        results[name] = {"figures": shown["figures"]}
        if args.verify or args.verify_only:
            try:
                results[name]["verify"] = verify_figures(name, data, shown["report"], args.markdown)
            except Exception as exc:  # noqa: BLE001 - say it, go on with the next profile
                print(f"CHECK verify {name}: FAILED: {type(exc).__name__}: {exc}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(results, handle, indent=1, default=str)
    return 0


def _median_ms(path: str) -> float | None:
    """The TIMING line's median step, None when the run printed none (it failed or was cut)."""
    try:
        with open(path, encoding="utf-8") as handle:
            line = next((line for line in handle if line.startswith("TIMING ")), None)
    except OSError:
        return None
    if line is None:
        return None
    record = json.loads(line[len("TIMING "):])
    if "median_ms" in record:
        return float(record["median_ms"])
    times = sorted(record["iter_ms"])
    return float(times[len(times) // 2])


def compare_main(args: argparse.Namespace) -> int:
    try:
        with open(args.report, encoding="utf-8") as handle:
            rows = json.load(handle).get(args.name, {}).get("verify", [])
    except (OSError, ValueError):
        rows = []
    picked = [r for r in rows if r["rule"] == args.rule and args.subject in r["subject"]
              and r["measured_saving_s"] is not None]
    if not picked:
        print(f"CHECK e2e {args.name} {args.rule}: FAILED: no verified finding to compare with")
        return 1
    iterations = args.iterations or picked[0]["iterations"]
    verified_ms = sum(r["measured_saving_s"] for r in picked) / iterations * 1e3
    before, after = _median_ms(args.before), _median_ms(args.after)
    if before is None or after is None:
        print(f"CHECK e2e {args.name} {args.rule}: FAILED: no TIMING line in {args.before if before is None else args.after}")
        return 1
    saved = before - after
    ratio = saved / verified_ms if verified_ms else float("nan")
    print(f"FIGURE e2e {args.name} {args.rule}: step {before:.3f} -> {after:.3f} ms, saved {saved:.3f} ms per step; "
          f"--verify said {verified_ms:.3f} ms per iteration ({len(picked)} finding(s)); ratio {ratio:.2f}")
    ok = abs(ratio - 1.0) <= TOLERANCE
    print(f"CHECK e2e {args.name} {args.rule}: " + ("ok" if ok else f"outside +-{TOLERANCE:.0%}"))
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("report")
    r.add_argument("profiles", nargs="+", metavar="NAME=PROFILE")
    r.add_argument("--verify", action="store_true")
    r.add_argument("--verify-only", action="store_true", help="only --verify's lines (the shown ones printed before)")
    r.add_argument("--json")
    r.add_argument("--markdown", metavar="DIR", help="write each verified report as NAME.verify.md there")
    c = sub.add_parser("compare")
    for opt in ("--report", "--name", "--rule", "--before", "--after"):
        c.add_argument(opt, required=True)
    c.add_argument("--subject", default="")
    c.add_argument("--iterations", type=float, default=None)
    args = p.parse_args(argv)
    return report_main(args) if args.cmd == "report" else compare_main(args)


if __name__ == "__main__":
    sys.exit(main())
