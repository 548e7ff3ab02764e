#!/usr/bin/env bash
# How much of a re-read tensor the L2 still holds (issue 29): scripts/l2_reuse_sweep.py's five
# producer/consumer patterns at 4-128 MiB, measured three ways: the consumer's time (CUDA events),
# ncu's DRAM read/write bytes per launch with the caches as the program left them, and a
# `rooflinectl profile --save-capture` of one sweep, whose tensor records give the cache model's
# DRAM bytes per launch (scripts/l2_reuse_figures.py pairs them offline, with a profile holding this
# GPU's measured roofs: run piece 10 or 75 first, or pass another profile of the same GPU). 44 s on
# the H200 (2026-12-02): timing 5 s, ncu 26 s, profile 13 s.
set -u -o pipefail
out="${PIECE_OUT:-${OUT_DIR:-.}/92-l2-reuse}"
mkdir -p "$out"
export PATH="$PATH:/usr/local/cuda/bin"
start=$(date +%s)
step() { echo "-- [$(( $(date +%s) - start )) s] $*"; }
rc=0
step "timing"
timeout 120 python3 scripts/l2_reuse_sweep.py --time > "$out/time.txt" 2>&1 || { echo "time: exit $?"; rc=1; }
grep -c TIME "$out/time.txt"
step "ncu, caches left alone"
timeout 240 ncu --cache-control none --clock-control none --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum \
  --csv --page raw --print-units base --log-file "$out/ncu.csv" python3 scripts/l2_reuse_sweep.py > "$out/ncu-program.txt" 2>&1 \
  || { echo "ncu: exit $?"; tail -5 "$out/ncu-program.txt"; rc=1; }
grep -c '^"[0-9]' "$out/ncu.csv"
step "profile --save-capture"
timeout 120 python3 -m rooflinectl profile scripts/l2_reuse_sweep.py:profiled --warmup 1 --iters 1 \
  -o "$out/sweep.profile.json" --save-capture "$out/sweep.capture.json" --top 4 > "$out/profile.txt" 2>&1 \
  || { echo "profile: exit $?"; tail -5 "$out/profile.txt"; rc=1; }
gzip -f "$out"/*.json "$out/ncu.csv" 2>/dev/null
step "done"
exit $rc
