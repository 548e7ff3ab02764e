#!/usr/bin/env bash
# One before/after advice example on the GPU machine (used by scripts/gpu.d/50-advice.sh and
# 55-advice-verify.sh): profile examples/NAME.py before and after its fix (--fixed), advise both
# (json, markdown), time both (--time: median of 50 steps, CUDA events), diff them.
# Usage: bash scripts/advice_example.sh OUT NAME "EXTRA ARGS" STEPS RULE
set -u
out="$1"; name="$2"; args="$3"; steps="$4"; rule="$5"
echo "== $name (expect $rule)"
for phase in before after; do
  fix=""; [ "$phase" = after ] && fix="--fixed"
  # shellcheck disable=SC2086
  python3 -m rooflinectl profile "examples/$name.py" -o "$out/$name.$phase.profile.json" --top 5 \
    --save-capture "$out/$name.$phase.capture.json.gz" -- \
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
