#!/usr/bin/env bash
# Does anything of a stopped session slow the steps after it (issue 28)? Within each process: a
# Llama-style training step (4 layers, hidden 1024, batch 4 x 512, bf16 autocast, fused AdamW)
# timed in POST_STOP_BLOCKS blocks of POST_STOP_STEPS steps before any profiler, then 6 steps
# under rooflinectl's ProfilingSession (the default sampling: it stops after 5), then as many
# blocks after the stop; `control` runs the same with no profiler. Each process's after/before
# ratio is the paired figure; also one CPU op, one module call and one tiny launch (host us)
# before and after, what stays installed, GC time and the allocator's cudaMalloc calls.
# scripts/investigations/post_stop_rounds.py runs the processes (forked after the imports), modes
# alternating, whole rounds only, until POST_STOP_BUDGET_S (default 190 s);
# scripts/investigations/post_stop_stats.py then compares ours with the control (Hodges-Lehmann
# shift, 95% bootstrap interval, per-round differences): FIGURE and CHECK lines.
# At most ~230 s on an H200 (budget + one process's overrun + the statistics).
# CPU check of the same path: POST_STOP_DEVICE=cpu POST_STOP_MODEL=mlp PIECE_OUT=/tmp/x bash scripts/gpu.d/64-post-stop.sh
set -u -o pipefail
out="${PIECE_OUT:?PIECE_OUT must be set}"
mkdir -p "$out"
here="$(cd "$(dirname "$0")/../.." && pwd)"
export PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}"
pin=()
if command -v taskset > /dev/null && [ "$(nproc)" -ge 16 ]; then pin=(taskset -c 8-15); fi
read -r -a modes <<< "${POST_STOP_MODES:-control ours}"
rm -f "$out/blocks.jsonl"
timeout "$(( ${POST_STOP_BUDGET_S:-190} + 40 ))" "${pin[@]}" python3 "$here/scripts/investigations/post_stop_rounds.py" \
  "$out" --budget-s "${POST_STOP_BUDGET_S:-190}" --modes "${modes[@]}" ${POST_STOP_SPAWN:+--spawn} -- \
  --device "${POST_STOP_DEVICE:-cuda}" --model "${POST_STOP_MODEL:-llama}" \
  --blocks "${POST_STOP_BLOCKS:-6}" --steps "${POST_STOP_STEPS:-15}" 2>&1 | tee "$out/rounds.log"
python3 "$here/scripts/investigations/post_stop_stats.py" "$out/blocks.jsonl" --gap-pct 8 | tee "$out/figures.txt"
