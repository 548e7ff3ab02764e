#!/usr/bin/env bash
# Does anything of a stopped session slow the steps after it (issue 28)? A Llama-style training
# step (4 layers, hidden 1024, batch 4 x 512, fused AdamW), in one process: 3 blocks of 20 steps
# before any profiler, 5 steps under rooflinectl's session (the default sampling), 3 blocks after
# the stop; `control` runs the same with no profiler (this host's drift within a process). The
# modes alternate, pinned to cores 8-15, POST_STOP_ROUNDS rounds (default 4): a BLOCKS line each
# (scripts/investigations/post_stop_blocks.py). About 20 s a process on an H200.
set -u -o pipefail
out="${PIECE_OUT:?PIECE_OUT must be set}"
pin=(taskset -c 8-15)
command -v taskset > /dev/null || pin=()
for round in $(seq "${POST_STOP_ROUNDS:-4}"); do
  for mode in control ours; do
    timeout 90 "${pin[@]}" python3 scripts/investigations/post_stop_blocks.py "$mode" --model llama \
      2> "$out/$mode-$round.err" | grep BLOCKS | tee -a "$out/blocks.jsonl"
  done
done
python3 - "$out/blocks.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(line.split(" ", 1)[1]) for line in open(sys.argv[1]) if line.startswith("BLOCKS")]
for mode in ("control", "ours"):
    got = [r for r in rows if r["mode"] == mode]
    if got:
        ratios = [r["ratio"] for r in got]
        before = [statistics.median(r["before_ms"]) for r in got]
        tiny = [(r["tiny_before_us"], r["tiny_after_us"]) for r in got]
        print(f"FIGURE post-stop {mode}: after/before step ratio median {statistics.median(ratios):.3f} "
              f"(runs {', '.join(f'{x:.3f}' for x in ratios)}); before-block medians {min(before):.2f}-{max(before):.2f} ms; "
              f"tiny launch before/after us {tiny}")
before = [statistics.median(r["before_ms"]) for r in rows]
if before:
    print(f"FIGURE post-stop floor: {len(before)} processes' steps before any profiler: {min(before):.2f}-{max(before):.2f} ms "
          f"(max/min {max(before) / min(before):.2f})")
PY
