#!/usr/bin/env bash
# Advice verified on real work: each example profiled before and after its fix (--fixed), advised,
# diffed and timed; scripts/advice_report.py writes the estimated-vs-measured table to
# $PIECE_OUT/advice.md (the lead copies it to docs/benchmarks/advice.md).
set -u
out="${PIECE_OUT:?PIECE_OUT must be set}"
steps=5
# example name | args | the rule its before-profile must show
examples=(
  "fp32_mlp||precision.fp32-matmul"
  "gelu_chain||fusion.memory-chain"
  "tiny_batch_loop||launch.overhead"
  "attention_advice||attention.materialised-scores"
)
for entry in "${examples[@]}"; do
  IFS='|' read -r name args rule <<<"$entry"
  if [ -n "${ADVICE_EXAMPLES:-}" ] && ! [[ " $ADVICE_EXAMPLES " == *" $name "* ]]; then continue; fi
  bash scripts/advice_example.sh "$out" "$name" "$args" "$steps" "$rule"
done
python3 -m rooflinectl advise "$out/gelu_chain.before.profile.json" --format junit --fail-on warning \
  > "$out/gelu_chain.before.junit.xml"; echo "advise --fail-on warning exit $? (expect 1)"
python3 scripts/advice_report.py "$out" --steps "$steps" \
  fp32_mlp=precision.fp32-matmul gelu_chain=fusion.memory-chain \
  tiny_batch_loop=launch.overhead attention_advice=attention.materialised-scores
cat "$out/advice.md"
