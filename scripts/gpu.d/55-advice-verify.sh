#!/usr/bin/env bash
# Why a GEMM is far from its roof, verified (expected runtime about 2.5 minutes): the examples for
# gemm.alignment (lm_head: GPT-2's vocabulary), gemm.batch-small (small_gemms) and
# gemm.legacy-kernel (int8_matmul), and grid.wave-quantisation (wave_tail: a Triton grid of 1 1/8
# waves) profiled before and after their fix, advised and timed; then
# `advise --verify` on every before-profile, 50-advice's too when that piece ran first (their files
# are copied here). scripts/advice_report.py writes estimate, --verify and measured saving per
# step to $PIECE_OUT/advice.md (for docs/benchmarks/advice.md).
set -u
out="${PIECE_OUT:?PIECE_OUT must be set}"
steps=5
examples=(
  "lm_head||gemm.alignment"
  "small_gemms||gemm.batch-small"
  "int8_matmul||gemm.legacy-kernel"
  "wave_tail||grid.wave-quantisation"
)
pairs=()
for entry in "${examples[@]}"; do
  IFS='|' read -r name args rule <<<"$entry"
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
