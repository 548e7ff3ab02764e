#!/usr/bin/env bash
# Costs that never hide time (issue 34) on the H200: the op families of the CPU audit on CUDA,
# every case moving more than 4x the 60 MB L2, profiled with `--counters ncu`: one FIGURE line per
# kernel row (analytic bytes / ncu DRAM bytes, min_bytes beside them) and the count within 20%;
# then the ops still without a cost on real models at small sizes (Llama-style training,
# ResNet-50 training, MoE layer) with their share of GPU time.
# Expected runtime: about 100-180 s (three small profiles of 10-30 s first, each cut at 45 s; then ncu
# replaying ~60 kernels, cut at 150 s).
set -u
out="${PIECE_OUT:?PIECE_OUT must be set}"
export PATH="$PATH:/usr/local/cuda/bin"
start=$(date +%s)
step() { echo "-- [$(( $(date +%s) - start )) s] $*"; }

model() {  # name script args...
  local name=$1 script=$2; shift 2
  step "unknown ops: $name"
  timeout 45 python3 -m rooflinectl profile "examples/real/$script" -o "$out/$name.profile.json" -q -- "$@" \
    > "$out/$name.log" 2>&1 || { echo "profile $name: exit $?"; tail -5 "$out/$name.log"; }
  [ -f "$out/$name.profile.json" ] && python3 scripts/costs_gpu_report.py unknown "$name" "$out/$name.profile.json" \
    | head -15 | tee -a "$out/unknown.txt"
}
model llama_train llama_train.py --layers 2 --hidden 512 --batch 2 --seq 256 --warmup 2 --steps 2
model resnet50_train resnet_train.py --batch 8 --size 128 --warmup 2 --steps 2
model moe_grouped moe_layer.py --impl grouped --tokens 4096 --dim 1024 --hidden 2048 --warmup 2 --steps 2
step "cases under ncu"
timeout 150 python3 -m rooflinectl profile scripts/costs_gpu_cases.py:run_all --warmup 1 --iters 1 --counters ncu -o "$out/costs.profile.json" \
  --top 5 > "$out/costs.log" 2>&1 || { echo "cases profile: exit $?"; tail -20 "$out/costs.log"; }
[ -f "$out/costs.profile.json" ] && python3 scripts/costs_gpu_report.py bytes "$out/costs.profile.json" | tee "$out/bytes.txt"

step "done"
