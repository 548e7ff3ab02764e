#!/usr/bin/env bash
# Why a GEMM or kernel is far from its roof, verified: the examples for gemm.alignment (lm_head:
# GPT-2's vocabulary), gemm.batch-small (small_gemms), gemm.legacy-kernel (int8_matmul),
# grid.wave-quantisation (wave_tail: a Triton grid of 1 1/8 waves), gemm.skinny (qkv_projections:
# Q, K and V as three skinny bf16 Linear layers, then one) and kernel.low-occupancy (wide_block: a
# Triton row kernel with a BLOCK_SIZE 64 times its rows) profiled before and after their fix,
# advised and timed; then `advise --verify` on every before-profile, 50-advice's too when that
# piece ran first (their files are copied here). scripts/advice_report.py writes estimate, --verify
# and measured saving per step to $PIECE_OUT/advice.md (for docs/benchmarks/advice.md).
# Runtime on the H200 machine (2026-11-30, beside another lane): the first four examples and
# qkv_projections took more than 340 s, the piece's limit then, before wide_block and the
# --verify loop; wave_tail and wide_block alone (ADVICE_ONLY) took 119 s. Give it 8 minutes alone.
# ADVICE_ONLY="wave_tail wide_block" runs only those examples (a rerun of the ones a deadline cut).
set -u
out="${PIECE_OUT:?PIECE_OUT must be set}"
steps=5
only="${ADVICE_ONLY:-}"
examples=(
  "lm_head||gemm.alignment"
  "small_gemms||gemm.batch-small"
  "int8_matmul||gemm.legacy-kernel"
  "wave_tail||grid.wave-quantisation"
  "qkv_projections||gemm.skinny"
  "wide_block||kernel.low-occupancy"
)
pairs=()
for entry in "${examples[@]}"; do
  IFS='|' read -r name args rule <<<"$entry"
  [ -z "$only" ] || [[ " $only " == *" $name "* ]] || continue
  bash scripts/advice_example.sh "$out" "$name" "$args" "$steps" "$rule"
  pairs+=("$name=$rule")
done
earlier="${OUT_DIR:-}/50-advice"
for pair in fp32_mlp=precision.fp32-matmul gelu_chain=fusion.memory-chain tiny_batch_loop=launch.overhead \
            attention_advice=attention.materialised-scores; do
  name="${pair%%=*}"
  [ -f "$earlier/$name.before.profile.json" ] || continue
  for phase in before after; do
    cp "$earlier/$name.$phase".{profile.json,advice.json,timing} "$out/" 2>/dev/null
  done
  pairs+=("$pair")
done
for profile in "$out"/*.before.profile.json; do
  name=$(basename "$profile" .before.profile.json)
  start=$(date +%s%N)
  python3 -m rooflinectl advise "$profile" --verify --format json > "$out/$name.before.verify.json"
  code=$?
  echo "advise --verify $name: exit $code in $(( ($(date +%s%N) - start) / 1000000 )) ms (python start and CUDA init included)"
done
python3 -m rooflinectl advise "$out/lm_head.before.profile.json" --verify --format markdown | head -16
python3 scripts/advice_report.py "$out" --steps "$steps" "${pairs[@]}"
cat "$out/advice.md"
