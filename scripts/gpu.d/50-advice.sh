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
  echo "== $name (expect $rule)"
  for phase in before after; do
    fix=""; [ "$phase" = after ] && fix="--fixed"
    # shellcheck disable=SC2086
    python3 -m rooflinectl profile "examples/$name.py" -o "$out/$name.$phase.profile.json" --top 5 \
      --save-trace "$out/$name.$phase.capture.json.gz" -- \
      --steps "$steps" $args $fix || echo "profile $name $phase: exit $?"
    python3 -m rooflinectl advise "$out/$name.$phase.profile.json" --format json > "$out/$name.$phase.advice.json"
    python3 -m rooflinectl advise "$out/$name.$phase.profile.json" --format markdown > "$out/$name.$phase.advice.md"
    # shellcheck disable=SC2086
    python3 "examples/$name.py" --time --steps 50 $args $fix | grep '^TIMING ' > "$out/$name.$phase.timing" \
      || echo "timing $name $phase: exit $?"
  done
  head -12 "$out/$name.before.advice.md"
  python3 -m rooflinectl diff "$out/$name.before.profile.json" "$out/$name.after.profile.json" --format markdown \
    > "$out/$name.diff.md"; echo "diff exit $?"
  head -8 "$out/$name.diff.md"
done
python3 -m rooflinectl advise "$out/gelu_chain.before.profile.json" --format junit --fail-on warning \
  > "$out/gelu_chain.before.junit.xml"; echo "advise --fail-on warning exit $? (expect 1)"
python3 scripts/advice_report.py "$out" --steps "$steps" \
  fp32_mlp=precision.fp32-matmul gelu_chain=fusion.memory-chain \
  tiny_batch_loop=launch.overhead attention_advice=attention.materialised-scores
cat "$out/advice.md"
