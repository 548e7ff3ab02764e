#!/usr/bin/env bash
# NVML during the run (issue 18), about 100 s: profiles of a 30 s bf16 GEMM loop (does it reach the
# 700 W limit?) and of an idle-heavy script (their clock lines print with the table), the clock strip
# charts, and the sampler's cost on kernel time (on vs off, alternating: scripts/bench_nvml.py).
# Writes $PIECE_OUT/nvml.md (the lead copies it to docs/benchmarks/nvml.md), nvml.json, *.profile.json, *.clocks.png.
set -u
out="${PIECE_OUT:?PIECE_OUT must be set}"
python3 -m rooflinectl profile examples/gemm_loop.py -o "$out/gemm_loop.profile.json" --top 3 -- --seconds 30 \
  || echo "profile gemm_loop: exit $?"
python3 -m rooflinectl profile examples/idle_heavy.py -o "$out/idle_heavy.profile.json" --top 3 -- --seconds 5 \
  || echo "profile idle_heavy: exit $?"
for name in gemm_loop idle_heavy; do
  python3 -m rooflinectl plot "$out/$name.profile.json" -o "$out/$name.clocks.png" --clocks --dpi 80 \
    || echo "plot $name: exit $?"
done
python3 scripts/bench_nvml.py "$out" "gemm_loop=$out/gemm_loop.profile.json" "idle_heavy=$out/idle_heavy.profile.json"
