#!/usr/bin/env bash
# README charts from real profiles (run by scripts/gpu-check with PIECE_OUT set).
# Writes: mlp.profile.json, roofline.png/.svg, roofline-terminal.txt,
#         attention_naive.profile.json, attention_sdpa.profile.json, attention-cmp.png/.svg.
# The profiles are small enough to commit under tests/data/ for tests/test_plot.py.
set -u -o pipefail
out="${PIECE_OUT:-$PWD/out/40-plot}"
mkdir -p "$out"
status=0
step() {  # step NAME CMD...: run, report, keep going so one failure does not hide the others
  local name=$1; shift
  echo "-- $name: $*"
  if "$@"; then echo "   ok"; else echo "   FAILED ($?)"; status=1; fi
}
rl() { if command -v rooflinectl >/dev/null; then rooflinectl "$@"; else python3 -m rooflinectl "$@"; fi; }

if [ -f examples/mlp.py ]; then
  step "profile mlp" rl profile examples/mlp.py -o "$out/mlp.profile.json" -- --batch 4096
  step "plot mlp png" rl plot "$out/mlp.profile.json" -o "$out/roofline.png" --dpi 150
  step "plot mlp svg" rl plot "$out/mlp.profile.json" -o "$out/roofline.svg"
  step "plot mlp by family" rl plot "$out/mlp.profile.json" -o "$out/roofline-family.png" --color-by family
  echo "-- plot mlp terminal"; COLUMNS=110 rl plot "$out/mlp.profile.json" --terminal > "$out/roofline-terminal.txt" || status=1
else
  echo "-- examples/mlp.py not there yet: skipping the single-profile chart"; status=1
fi

args=(--batch 4 --heads 16 --seq 2048 --dim 64)
step "profile naive attention" rl profile examples/attention_naive.py -o "$out/attention_naive.profile.json" -- "${args[@]}"
step "profile sdpa attention" rl profile examples/attention_sdpa.py -o "$out/attention_sdpa.profile.json" -- "${args[@]}"
step "plot naive" rl plot "$out/attention_naive.profile.json" -o "$out/attention_naive.png" --dpi 150
step "plot comparison png" rl plot "$out/attention_naive.profile.json" "$out/attention_sdpa.profile.json" \
  -o "$out/attention-cmp.png" --dpi 150 --title "Naive attention vs scaled_dot_product_attention (H200, bf16)"
step "plot comparison svg" rl plot "$out/attention_naive.profile.json" "$out/attention_sdpa.profile.json" -o "$out/attention-cmp.svg"
step "plot tests on the new profiles" bash -c "mkdir -p tests/data && cp '$out'/*.profile.json tests/data/ && python3 -m pytest -q -p no:cacheprovider tests/test_plot.py -k recorded 2>&1 | tail -5"
ls -la "$out"
exit $status
