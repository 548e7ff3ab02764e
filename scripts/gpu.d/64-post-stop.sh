#!/usr/bin/env bash
# Does anything of a stopped session slow the steps after it (issue 28)? Within each process: a
# Llama-style training step (4 layers, hidden 1024, batch 4 x 512, bf16 autocast, fused AdamW)
# timed in POST_STOP_BLOCKS blocks of POST_STOP_STEPS steps before any profiler, then 6 steps
# under rooflinectl's ProfilingSession (the default sampling: it stops after 5), then as many
# blocks after the stop; `control` runs the same with no profiler. The paired figure is each
# process's after/before ratio. Processes of each mode alternate (the order turns each round),
# whole rounds only, until POST_STOP_BUDGET_S (default 200 s) would be passed; then
# scripts/investigations/post_stop_stats.py compares ours with the control (Hodges-Lehmann shift,
# 95% bootstrap interval, per-round differences) and prints FIGURE/CHECK lines.
# About 10-15 s a process on an H200: 7-9 rounds of 2 in the budget; at most ~230 s in all.
# CPU check of the same path: POST_STOP_DEVICE=cpu POST_STOP_MODEL=mlp PIECE_OUT=/tmp/x bash scripts/gpu.d/64-post-stop.sh
set -u -o pipefail
out="${PIECE_OUT:?PIECE_OUT must be set}"
mkdir -p "$out"
here="$(cd "$(dirname "$0")/../.." && pwd)"
device="${POST_STOP_DEVICE:-cuda}" model="${POST_STOP_MODEL:-llama}"
read -r -a modes <<< "${POST_STOP_MODES:-control ours}"
budget_s="${POST_STOP_BUDGET_S:-200}"
pin=()
if command -v taskset > /dev/null && [ "$(nproc)" -ge 16 ]; then pin=(taskset -c 8-15); fi
start=$(date +%s)
slowest=0  # the longest process so far (s): a round starts only if all its processes fit
round=0
: > "$out/blocks.jsonl"
while :; do
  left=$(( start + budget_s - $(date +%s) ))
  [ "$round" -gt 0 ] && [ "$left" -lt $(( slowest * ${#modes[@]} + 5 )) ] && break
  [ "$left" -le 0 ] && break
  round=$((round + 1))
  n=${#modes[@]}
  for i in $(seq 0 $((n - 1))); do
    mode=${modes[$(( (i + round - 1) % n ))]}  # the order turns each round
    t0=$(date +%s)
    timeout 120 "${pin[@]}" python3 "$here/scripts/investigations/post_stop_blocks.py" "$mode" --device "$device" \
      --model "$model" --blocks "${POST_STOP_BLOCKS:-6}" --steps "${POST_STOP_STEPS:-15}" \
      > "$out/$mode-$round.log" 2>&1
    rc=$?
    took=$(( $(date +%s) - t0 ))
    [ "$took" -gt "$slowest" ] && slowest=$took
    if grep -q '^BLOCKS ' "$out/$mode-$round.log"; then
      grep '^BLOCKS ' "$out/$mode-$round.log" >> "$out/blocks.jsonl"
      echo "round $round $mode: exit $rc, ${took} s, ratio $(grep '^BLOCKS ' "$out/$mode-$round.log" | grep -o '"ratio": [0-9.]*')"
    else
      echo "round $round $mode: exit $rc, ${took} s, no BLOCKS line; last lines:"
      tail -5 "$out/$mode-$round.log"
    fi
  done
done
echo "$round rounds in $(( $(date +%s) - start )) s (slowest process ${slowest} s)"
python3 "$here/scripts/investigations/post_stop_stats.py" "$out/blocks.jsonl" --gap-pct 8 | tee "$out/figures.txt"
