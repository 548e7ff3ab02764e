#!/usr/bin/env bash
# Does anything of a stopped session slow the steps after it (issue 28)? A Llama-style training
# step (4 layers, hidden 1024, batch 4 x 512, bf16 autocast, fused AdamW), two designs:
# 1. Rounds (post_stop_rounds.py + post_stop_blocks.py, POST_STOP_BUDGET_S, default 140 s): one
#    process per mode, control and ours alternating; each process's after/before ratio of block
#    medians, plus a CPU op, a module call and a tiny launch (host us) before and after, what stays
#    installed, GC time and the allocator's cudaMalloc calls. post_stop_stats.py compares them.
#    On the H200 (05:3x UTC): 14 rounds in 172 s, ours vs control -5.1% (-10.6% to +1.2%).
# 2. Ping-pong (scripts/investigations/post_stop_pingpong.py, POST_STOP_PINGPONG_S, default 70 s):
#    two processes take turns step by step (a token through pipes, a sync at the end of each
#    turn), one with rooflinectl's ProfilingSession (the default sampling: it stops after 5
#    steps), one plain; per trial, the median over step pairs of log(ours/control) after the
#    stop less before it. The host's noise hits both players alike. Not yet run on the H200.
# FIGURE and CHECK lines from both (the rounds' written first). At most ~235 s on an H200.
# CPU check of the same path: POST_STOP_DEVICE=cpu POST_STOP_MODEL=mlp PIECE_OUT=/tmp/x bash scripts/gpu.d/64-post-stop.sh
set -u -o pipefail
out="${PIECE_OUT:?PIECE_OUT must be set}"
mkdir -p "$out"
here="$(cd "$(dirname "$0")/../.." && pwd)"
export PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}"
device="${POST_STOP_DEVICE:-cuda}" model="${POST_STOP_MODEL:-llama}"
pin=()
if command -v taskset > /dev/null && [ "$(nproc)" -ge 16 ]; then pin=(taskset -c 8-15); fi
read -r -a modes <<< "${POST_STOP_MODES:-control ours}"
rm -f "$out/blocks.jsonl" "$out/pingpong.jsonl"
echo "== rounds"
timeout "$(( ${POST_STOP_BUDGET_S:-140} + 40 ))" "${pin[@]}" python3 "$here/scripts/investigations/post_stop_rounds.py" \
  "$out" --budget-s "${POST_STOP_BUDGET_S:-140}" --modes "${modes[@]}" ${POST_STOP_SPAWN:+--spawn} -- \
  --device "$device" --model "$model" \
  --blocks "${POST_STOP_BLOCKS:-6}" --steps "${POST_STOP_STEPS:-15}" 2>&1 | tee "$out/rounds.log"
python3 "$here/scripts/investigations/post_stop_stats.py" "$out/blocks.jsonl" --gap-pct 8 | tee "$out/figures.txt"
echo "== ping-pong"
timeout "$(( ${POST_STOP_PINGPONG_S:-70} + 40 ))" "${pin[@]}" python3 "$here/scripts/investigations/post_stop_pingpong.py" \
  --device "$device" --model "$model" --budget-s "${POST_STOP_PINGPONG_S:-70}" --steps "${POST_STOP_PAIRS:-60}" \
  --out "$out/pingpong.jsonl" --log "$out/pingpong-players.err" ${POST_STOP_SPAWN:+--spawn} 2>&1 | tee "$out/pingpong.log"
grep -h '^\(FIGURE\|CHECK\)' "$out/pingpong.log" >> "$out/figures.txt"
