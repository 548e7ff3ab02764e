#!/usr/bin/env bash
# Roofs that are ceilings (issue 29) on the GPU machine: `ceilings --measure --refresh` (per
# precision the peak the roof uses, the measured achievable figure and their clocks; the L2 roof),
# then three real training scripts (random weights, small sizes) profiled as a new user would:
# a Llama-style LM, ResNet-50 and GPT-2. For each, FIGURE lines (scripts/roofs_figures.py): rows
# above the roof they are held to by more than 3% and the largest ratio, rows held to L2 and their
# time share, and what the roofs of before issue 29 gave on the same table; CHECK ok when no row
# is more than 3% above its roof. Expected runtime: about 100-130 s on an H200 (ceilings ~25 s,
# each training script 20-30 s, imports included). ROOFS_COUNTERS=1 adds GPT-2 under --counters ncu:
# the analytic memory level against the counters' (ncu's DRAM bytes are cold-cache).
set -u -o pipefail
out="${PIECE_OUT:-${OUT_DIR:-.}/72-roofs}"
mkdir -p "$out"
export ROOFLINECTL_CACHE_DIR="${ROOFLINECTL_CACHE_DIR:-$out/cache}"
rl() { python3 -m rooflinectl "$@"; }
start=$(date +%s)
elapsed() { echo $(( $(date +%s) - start )); }
rc=0

echo "-- [$(elapsed) s] ceilings --measure --refresh"
rl ceilings --measure --refresh --budget-s 40 --format json > "$out/ceilings.json" 2> "$out/ceilings.err" || { echo "ceilings: exit $?"; rc=1; }
rl ceilings > "$out/ceilings.txt" 2>&1
sed -n '/^Compute:/,/^Measurements/p' "$out/ceilings.txt"
python3 scripts/roofs_figures.py ceilings "$out/ceilings.json" || rc=1

run() {  # name script args...
  local name=$1 script=$2
  shift 2
  echo "== [$(elapsed) s] $name: rooflinectl profile $script -- $*"
  if ! rl profile "$script" -o "$out/$name.profile.json" --top 12 -- "$@" > "$out/$name.txt" 2>&1; then
    echo "-- profile exit $?"; grep -v '^USDT' "$out/$name.txt" | tail -20; rc=1; return
  fi
  grep -v '^USDT' "$out/$name.txt" | head -40
  python3 scripts/roofs_figures.py profile "$name" "$out/$name.profile.json" || rc=1
  rl advise "$out/$name.profile.json" --format json > "$out/$name.advice.json" 2>/dev/null
  python3 -c "import json,sys; f=json.load(open(sys.argv[1]))['findings']; a=[x for x in f if x['rule_id']=='data.above-roof']; print(f'FIGURE $name: advise data.above-roof findings {len(a)}'); [print('  ', x['evidence'][:220]) for x in a[:5]]" "$out/$name.advice.json" || true
  rl plot "$out/$name.profile.json" -o "$out/$name.png" > /dev/null 2>&1 || echo "plot $name: exit $?"
}

run llama examples/real/llama_train.py --layers 4 --hidden 1024 --batch 4 --seq 1024 --warmup 2 --steps 3
run resnet examples/real/resnet_train.py --batch 32 --warmup 2 --steps 3
run gpt2 examples/real/gpt2_train.py --layers 4 --batch 4 --seq 512 --warmup 2 --steps 3
if [ "${ROOFS_COUNTERS:-0}" = 1 ]; then  # about 60-90 s more: run with PIECE_TIMEOUT_S=400
  export PATH="$PATH:/usr/local/cuda/bin"
  echo "== [$(elapsed) s] gpt2 with --counters ncu (sampled)"
  rl profile examples/real/gpt2_train.py --counters ncu -o "$out/gpt2-ncu.profile.json" --top 5 -- --layers 4 --batch 4 \
    --seq 512 --warmup 2 --steps 3 > "$out/gpt2-ncu.txt" 2>&1 || echo "counters profile: exit $?"
  python3 scripts/roofs_figures.py counters gpt2 "$out/gpt2-ncu.profile.json" || echo "counters figures: exit $?"
fi
echo "-- [$(elapsed) s] done"
exit $rc
