#!/usr/bin/env bash
# Cost-model coverage on real workloads (issue 11): each example profiled by `rooflinectl profile`
# (rooflinectl's own capture: tensor-list shapes and dtypes come from the profiler's event tree),
# `show --unknown` on each profile, then scripts/coverage_report.py on the saved captures: the
# known-cost share of GPU time over the whole run and over the timed loop (after the 2nd
# optimizer step), the top uncosted kernels with their ops and why, groups above their roof.
# Target: >= 97% known on ResNet-50 training, GPT-2 training and the MoE layer.
# Expected runtime: 60-120 s on one H200 (four profiles of 10-40 s each, mostly trace export and parsing).
set -u
out="${PIECE_OUT:?PIECE_OUT must be set}"
profile() {  # name script args...
  local name=$1 script=$2; shift 2
  python3 -m rooflinectl profile "examples/real/$script" -o "$out/$name.profile.json" \
    --save-capture "$out/$name.capture.json.gz" -q -- "$@" > "$out/$name.log" 2>&1 || echo "profile $name: exit $?"
  grep '^TIMING ' "$out/$name.log" | cut -c1-200
  python3 -m rooflinectl show "$out/$name.profile.json" --unknown --top 6 || echo "show $name: exit $?"
}
profile resnet50_train resnet_train.py --batch 64 --warmup 2 --steps 3
profile gpt2_train gpt2_train.py --layers 12 --batch 8 --seq 1024 --warmup 2 --steps 3
profile moe_grouped moe_layer.py --impl grouped --warmup 2 --steps 3
profile moe_loop moe_layer.py --impl loop --warmup 2 --steps 3
python3 scripts/coverage_report.py --warmup-steps 2 --top 6 "$out"/*.capture.json.gz | tee "$out/coverage.txt"
