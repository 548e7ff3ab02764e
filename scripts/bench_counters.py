"""Speed of the counters tier: sampled ncu (one launch per sampling class: kernel, launch
configuration, op, shapes, dtype) against plain ncu (every launch, same metrics), on a GPT-2 small
forward region of about 1,000 launches (GPU machine).

python scripts/bench_counters.py OUT_DIR [--target gpt2|torch-transformer] [--iters 5] [--plain-launches 250 | --plain-all]

One analytic capture (function mode), then the program again under ncu several times, each with
the same metrics and the same counted region (cudaProfilerStart/Stop around the iterations):
- program alone (no ncu): W0;
- sampled (rooflinectl's default): Ws;
- plain ncu on the first launch only: W1 (ncu start-up and the program's own run);
- plain ncu on the first K launches: WK (K = --plain-launches, or every launch with --plain-all).
Plain ncu on every launch is WK itself with --plain-all; otherwise W1 + (N - 1) x (WK - W1) / (K - 1),
the per-launch replay cost measured on K launches applied to all N (the formula is printed with
its inputs). Two ratios: wall time (Ws / plain), and the time ncu adds to the program
((Ws - W0) / (plain - W0)). Writes bench_counters.TARGET.json, bench_counters.TARGET.md and
TARGET.profile.json (the sampled profile) into OUT_DIR. The torch-transformer target has GPT-2
small's shapes without importing transformers (scripts/counters_transformer.py says why). Expected on the H200: about 2 minutes with the default
--plain-launches 120 (the program alone ~14 s, sampled ~25 s, plain on 1 and on 120 launches
~17 s and ~45 s, the analytic capture), about 6 minutes with --plain-all.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# --target: the region's program, and how the report names it
TARGETS = {
    "gpt2": (ROOT / "scripts" / "counters_gpt2.py",
             "GPT-2 small forward (transformers; 12 layers, width 768, batch 4, seq 512, bf16)"),
    "torch-transformer": (ROOT / "scripts" / "counters_transformer.py",
                          "torch.nn transformer forward (GPT-2 small's shapes: 12 pre-norm layers, width 768, "
                          "vocabulary head; batch 4, seq 512, bf16)"),
}


def program_alone_s(target: Path, iters: int, warmup: int) -> float:
    status = Path(tempfile.mkdtemp()) / "status.json"
    start = time.monotonic()
    subprocess.run([sys.executable, "-m", "rooflinectl.capture.ncu.child", "--status", str(status), "function",
                    str(target), "forward", "--warmup", str(warmup), "--iters", str(iters)], check=True,
                   stdout=subprocess.DEVNULL)
    return time.monotonic() - start


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--iters", type=int, default=5)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--plain-launches", type=int, default=250)
    p.add_argument("--plain-all", action="store_true")
    p.add_argument("--target", choices=sorted(TARGETS), default="gpt2")
    args = p.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    import torch

    from rooflinectl.attribution.counters import launch_keys
    from rooflinectl.capture.run.runner import run_function
    from rooflinectl.outputs.profile_file import save_profile
    from rooflinectl.pipeline import build_profile
    from rooflinectl.profiling_counters import CounterOptions, Target, collect_counters

    target_path, workload = TARGETS[args.target]
    outcome = run_function(target_path, "forward", warmup=args.warmup, iters=args.iters, device_kind="cuda")
    if not outcome.completed:
        sys.exit(f"the {args.target} target failed (for gpt2: is transformers installed?)")
    data, launches = build_profile(outcome.capture, command=["bench_counters"], completed=True, exit_code=0)
    n = sum(k.group >= 0 for k in launch_keys(launches, outcome.capture.trace))  # counted (function mode: all)
    target = Target(target_path, "forward", (), args.warmup, args.iters)

    def run(samples: int, launch_count: int | None):
        result = collect_counters(data, launches, outcome.capture, target,
                                  CounterOptions("ncu", samples=samples, launch_count=launch_count, timeout_s=900),
                                  lambda line: print(line, flush=True))
        return result, result.summary["counters"]

    w0 = program_alone_s(target_path, args.iters, args.warmup)
    sampled, s = run(1, None)
    save_profile(sampled, out / f"{args.target}.profile.json")
    _, one = run(0, 1)
    k = n if args.plain_all else min(args.plain_launches, n)
    _, plain = run(0, k)
    w1, wk, ws = one["wall_s"], plain["wall_s"], s["wall_s"]
    per_launch = (wk - w1) / max(k - 1, 1)
    plain_all = wk if k == n else w1 + (n - 1) * per_launch
    record = {
        "device": torch.cuda.get_device_name(), "date": dt.date.today().isoformat(), "ncu": s.get("ncu_version"),
        "workload": f"{workload}, {args.iters} forwards after {args.warmup} warm-up",
        "launches_in_region": n, "groups": s["rows"], "groups_measured": s["rows_measured"],
        "groups_shared": s.get("rows_shared"), "classes": s.get("classes"), "classes_measured": s.get("classes_measured"),
        "launches_planned_sampled": s.get("launches_expected"), "selection": s.get("selection"),
        "launches_measured_sampled": s["launches_measured"],
        "program_alone_s": w0, "sampled_wall_s": ws, "plain_first_launch_wall_s": w1,
        "plain_launches_measured": k, "plain_k_wall_s": wk, "plain_per_launch_s": per_launch,
        "plain_all_wall_s": plain_all, "plain_all_measured": k == n,
        "ratio_wall": ws / plain_all, "ratio_overhead": (ws - w0) / (plain_all - w0) if plain_all > w0 else None,
        "numbering_rule": s.get("numbering_rule"), "time_share_measured": s.get("time_share_measured"),
    }
    (out / f"bench_counters.{args.target}.json").write_text(json.dumps(record, indent=1))
    how = ("measured on every launch" if k == n else
           f"W1 + (N - 1) x (WK - W1) / (K - 1) = {w1:.1f} + {n - 1} x ({wk:.1f} - {w1:.1f}) / {k - 1}")
    lines = [
        f"## Counters speed: sampled against plain ncu ({record['device']}, {record['date']}, ncu {record['ncu']})", "",
        f"Workload: {record['workload']}: {n} kernel launches in the counted region, {s['rows']} kernel groups "
        f"(table rows), {record['classes']} sampling classes (same kernel, launch configuration, op, shapes, dtype).",
        "",
        "| run | launches measured | wall time |", "|---|---:|---:|",
        f"| program alone (no ncu) | 0 | {w0:.1f} s |",
        f"| rooflinectl sampled (one launch per sampling class) | {s['launches_measured']} | {ws:.1f} s |",
        f"| plain ncu, first launch only | 1 | {w1:.1f} s |",
        f"| plain ncu, first {k} launches | {k} | {wk:.1f} s |",
        f"| plain ncu, every launch ({'measured' if k == n else 'from the row above'}) | {n} | {plain_all:.1f} s |",
        "",
        f"Plain ncu on every launch: {how} = {plain_all:.1f} s. Sampled / plain: **{record['ratio_wall']:.3f}** of the "
        f"wall time (target at most 0.05); of the time ncu adds to the program, "
        + (f"**{record['ratio_overhead']:.3f}**." if record["ratio_overhead"] is not None else "n/a.")
        + f" ncu numbered invocations by '{record['numbering_rule']}'.",
        "",
        f"Sampled (`--kernel-id {s.get('selection')}`): {s['launches_measured']} launches measured of "
        f"{s.get('launches_expected')} planned, covering "
        f"{record['classes_measured']} of {record['classes']} sampling classes; counters on {s['rows_measured']} of "
        f"{s['rows']} groups ({record['groups_shared']} of them from launches of other groups of their class), "
        f"{100 * (s.get('time_share_measured') or 0):.1f}% of kernel time.",
    ]
    (out / f"bench_counters.{args.target}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
