#!/usr/bin/env bash
# Counters tier (issue 12) on the GPU machine: the cost model against Nsight Compute on a
# KernelBench-like suite and the examples, and the speed of sampled against plain ncu.
# Expected runtime: about 3.2 minutes (most of it ncu replaying kernels; the speed step about 2
# minutes, of which the sampled GPT-2 run ~25 s: 30 launches planned for 20 sampling classes).
# Writes into $PIECE_OUT: accuracy.md (docs/benchmarks/accuracy.md-ready), suite/mlp/gpt2
# profiles with counters, their `validate` reports, the hierarchical roofline of the suite,
# bench_counters.{json,md}.
# COUNTERS_PLAIN_ALL=1 measures plain ncu on every launch of the GPT-2 region instead of the
# first 120 (adds about 4 minutes: run it with PIECE_TIMEOUT_S=600).
# COUNTERS_SPEED_ONLY=1 runs only the speed step (about 2 minutes).
set -u
out="${PIECE_OUT:?PIECE_OUT must be set}"
export PATH="$PATH:/usr/local/cuda/bin"
rl() { python3 -m rooflinectl "$@"; }
start=$(date +%s)
elapsed() { echo $(( $(date +%s) - start )); }
step() { echo "-- [$(elapsed) s] $*"; }

step "ceilings (cached by 10-ceilings, else measured: L1 and L2 roofs for the hierarchical chart)"
rl ceilings --measure > "$out/ceilings.txt" 2>&1 || echo "ceilings --measure: exit $?"

if [ "${COUNTERS_SPEED_ONLY:-0}" != 1 ]; then
step "suite: 44 problems, one analytic run and one ncu run"
rl profile scripts/counters_suite.py:run_all --warmup 1 --iters 1 --counters ncu -o "$out/suite.profile.json" --top 10 \
  || echo "suite profile: exit $?"
rl validate "$out/suite.profile.json" --format markdown --top 60 > "$out/suite.validate.md" || echo "validate: exit $?"
rl validate "$out/suite.profile.json" --format json > "$out/suite.validate.json"
rl plot "$out/suite.profile.json" --levels -o "$out/suite-levels.png" --dpi 130 || echo "plot --levels: exit $?"
rl advise "$out/suite.profile.json" --format markdown > "$out/suite.advice.md"

fi

step "speed: GPT-2 small forward region, sampled (one launch per sampling class) against plain ncu"
plain=(--plain-launches 120)
[ "${COUNTERS_PLAIN_ALL:-0}" = 1 ] && plain=(--plain-all)
python3 scripts/bench_counters.py "$out" "${plain[@]}" 2>&1 | grep -v "^counters: [0-9]" | tail -25 || echo "bench: exit $?"
# the same region shape from torch.nn alone: a program that starts in seconds (no transformers import)
python3 scripts/bench_counters.py "$out" --target torch-transformer "${plain[@]}" 2>&1 | grep -v "^counters: [0-9]" | tail -25 \
  || echo "bench torch-transformer: exit $?"
if [ "${COUNTERS_SPEED_ONLY:-0}" = 1 ]; then step "done (speed only)"; exit 0; fi

step "example: examples/mlp.py (bf16, width 4096, 3 steps)"
rl profile examples/mlp.py --counters ncu -o "$out/mlp.profile.json" --top 8 -- --batch 1024 || echo "mlp: exit $?"
rl validate "$out/mlp.profile.json" --format markdown > "$out/mlp.validate.md"
rl plot "$out/mlp.profile.json" --levels -o "$out/mlp-levels.png" --dpi 130
rl advise "$out/mlp.profile.json" --format markdown > "$out/mlp.advice.md"

step "report"
python3 scripts/counters_report.py "$out" > "$out/accuracy.md" || echo "report: exit $?"
cat "$out/accuracy.md" | head -80
step "done"
