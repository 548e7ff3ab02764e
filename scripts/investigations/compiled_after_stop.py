"""Is a torch.compile'd step slower after `--profile-steps` stops than in a run without rooflinectl?
(issue 9, compiled models.) ResNet-50 training with its forward and backward compiled (SGD eager),
3 warm-up + 20 steps; runs, in this order: plain, ours (`--profile-steps 8`), ours with Inductor's
profiler annotations off (the session's `inductor_annotations` replaced by a no-op, to see whether
compiling with them changes the code that runs after the stop), plain again. Compared: the median
of the script's own CUDA events over the last 14 steps (the ones ours times after the stop).

Usage: python3 scripts/investigations/compiled_after_stop.py OUT_DIR [--batch 64] [--pin CPUS]
Prints one JSON line per run and a markdown table (also OUT_DIR/compiled_after_stop.md).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

from bench_distributed import timing_lines  # scripts/ is on the path of a script run from it

NO_ANNOTATIONS = ("import contextlib, sys; import rooflinectl.capture.run.session as s; "
                  "s.inductor_annotations = contextlib.nullcontext; from rooflinectl.cli.main import main; "
                  "sys.argv[0] = 'rooflinectl'; main()")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--pin", help="CPU list for taskset -c")
    ns = parser.parse_args()
    ns.out.mkdir(parents=True, exist_ok=True)
    script = ["examples/real/resnet_train.py", "--batch", str(ns.batch), "--compile", "default", "--warmup", "3",
              "--steps", "20"]
    pin = ["taskset", "-c", ns.pin] if ns.pin else []
    profile = ["profile", "--profile-steps", "8", "-q", "--force"]
    runs = {
        "plain": [*pin, sys.executable, *script],
        "ours": [*pin, sys.executable, "-m", "rooflinectl", *profile, "-o", str(ns.out / "ours.json"), script[0],
                 "--", *script[1:]],
        "ours, annotations off": [*pin, sys.executable, "-c", NO_ANNOTATIONS, *profile, "-o",
                                  str(ns.out / "noannot.json"), script[0], "--", *script[1:]],
        "plain again": [*pin, sys.executable, *script],
    }
    rows = []
    for name, command in runs.items():
        log = ns.out / (name.replace(" ", "_").replace(",", "") + ".log")
        done = subprocess.run(command, capture_output=True, text=True, timeout=300)
        log.write_text(done.stdout + done.stderr)
        found = timing_lines(log).get(0)
        steps = [float(t) for t in found["iter_ms"]][-14:] if found else []
        row = {"run": name, "exit": done.returncode, "median_ms": round(statistics.median(steps), 2) if steps else None,
               "range_ms": [round(min(steps), 2), round(max(steps), 2)] if steps else None}
        profile_path = ns.out / ("ours.json" if name == "ours" else "noannot.json")
        if name.startswith("ours") and profile_path.exists():
            summary = json.loads(profile_path.read_text())["summary"]
            row["ours_unprofiled_ms"] = round((summary.get("unprofiled_step_time_s") or 0) * 1e3, 2)
        rows.append(row)
        print(json.dumps(row), flush=True)
    lines = [f"`python3 {' '.join(sys.argv)}`", "", "| run | exit | last 14 steps, median (script's CUDA events) "
             "| range | un-profiled step, ours |", "|---|---:|---:|---|---:|"]
    lines += [f"| {r['run']} | {r['exit']} | {r['median_ms']} ms | {r['range_ms']} | {r.get('ours_unprofiled_ms', '-')} |"
              for r in rows]
    (ns.out / "compiled_after_stop.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
