#!/usr/bin/env bash
# Capture at scale (issue 14): `rooflinectl profile` of 200,000 tiny launches against the same
# script under a bare torch.profiler that exports its trace (wall time, CPU time and peak RSS of
# each whole process), then 1,000,000 launches when the time left allows it (else scale.md says
# why), and the CLI's start-up time. Expected runtime: about 1 minute; the piece stays under
# SCALE_BUDGET_S (default 170 s). The 1,000,000-launch run needs about 3 more minutes: to include
# it, `GPU_PIECES="80" PIECE_TIMEOUT_S=590 SCALE_BUDGET_S=560 bash scripts/gpu-check`.
# Writes $PIECE_OUT/startup.{json,md}, {small,big}/capture.{json,md} and scale.md (the lead
# copies scale.md into docs/benchmarks/scale.md).
set -u
out="${PIECE_OUT:?PIECE_OUT must be set}"
budget_s="${SCALE_BUDGET_S:-170}"
small="${SCALE_LAUNCHES:-200000}"  # smaller only to try the piece on a CPU machine
big=$((small * 5))
start_s=$(date +%s)
python3 -c 'import orjson' 2>/dev/null && echo "orjson present" || echo "orjson absent: traces decoded with the standard library's json"
python3 -c 'import msgspec' 2>/dev/null && echo "msgspec present: typed events" || echo "msgspec absent: events decoded as dicts"
python3 scripts/bench_scale.py startup "$out" || echo "startup benchmark failed: exit $?"
python3 scripts/bench_scale.py capture "$out/small" --launches "$small" --timeout-s 150 || echo "$small-launch capture benchmark failed: exit $?"
# 1,000,000 launches: what grows with launches takes about 5x the 200,000 run; run only if that fits.
python3 - "$out" "$budget_s" "$start_s" "$big" <<'EOF'
import json, subprocess, sys, time
from pathlib import Path
out, budget_s, start_s, big = Path(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
try:
    row = json.loads((out / "small" / "capture.json").read_text())["capture"][0]
    phases = row["bare"]["reported"]  # what grows with launches: the run, stop and export (and ours)
    scaled_s = phases["run_s"] + phases["stop_s"] + phases["export_s"]
    fixed_s = row["bare"]["wall_s"] - scaled_s  # start-up: python, torch, CUDA context
    estimate_s = 2 * fixed_s + 5 * (scaled_s + row["rooflinectl"]["wall_s"] - fixed_s) + 10
except (OSError, KeyError, IndexError, ValueError) as exc:
    estimate_s, row = None, None
left_s = budget_s - (time.time() - start_s)
if estimate_s is not None and estimate_s < left_s:
    subprocess.run([sys.executable, "scripts/bench_scale.py", "capture", str(out / "big"), "--launches", str(big),
                    "--timeout-s", str(max(left_s - 5, 30) / 2)], check=False)
else:
    why = (f"{big:,} launches: not run, the {big // 5:,}-launch run gave no figures" if estimate_s is None else
           f"{big:,} launches: not run, they need about {estimate_s:.0f} s (start-up, and 5x what grew with launches), {left_s:.0f} s were left "
           f"of this piece's {budget_s:.0f} s; run `python3 scripts/bench_scale.py capture OUT --launches {big}` alone")
    (out / "big").mkdir(parents=True, exist_ok=True)
    (out / "big" / "skipped.txt").write_text(why + "\n")
    print(why)
EOF
{
  echo "## Capture at scale (scripts/gpu.d/85-scale.sh)"
  echo
  cat "$out/small/capture.md" 2>/dev/null
  if [ -f "$out/big/capture.md" ]; then tail -n +5 "$out/big/capture.md"; else echo; cat "$out/big/skipped.txt" 2>/dev/null; fi
  echo
  echo "## Start-up"
  echo
  cat "$out/startup.md" 2>/dev/null
} > "$out/scale.md"
cat "$out/scale.md"
