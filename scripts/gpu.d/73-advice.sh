#!/usr/bin/env bash
# Advice a person reads in one screen (issue 30), on real models with random weights, small sizes:
# GPT-2 small eager forward (12 layers, batch 4, seq 512; function mode, so launch.overhead's
# CUDA-graph replay can be verified), a Llama-style training step (examples/real/llama_train.py,
# 4 layers), a Mixtral-style MoE forward (examples/real/mixtral_forward.py, 4 layers), the MoE
# layer as a loop of expert GEMMs (examples/real/moe_layer.py, 4096 tokens, 1024 -> 2048) and a compiled ViT-B/16 (4 layers,
# function mode). For each: FIGURE lines with the findings shown by default (at most 10), the
# duplicates among them (same rule and pattern: expect 0), whether the zero-saving notes come
# after the actions, and `advise --verify`'s measurement of each warning-level finding
# (scripts/advice_check.py). Then three end-to-end checks: the GPT-2 LM head padded to 50304, the
# GPT-2 MLP activations compiled, the MoE loop as one grouped GEMM, each timed on the model itself
# against the verified saving (+-30%). The GPT-2 table at 80 columns shows the first screen.
# Order: profiles, the shown figures of all, --verify of GPT-2 and the MoE loop, the end-to-end
# timings, then --verify of the rest (what a deadline cuts is the least needed).
# Expected runtime on an H200: about 200-300 s; give it PIECE_TIMEOUT_S=400 (ADVICE_SKIP="vit e2e"
# leaves parts out).
set -u -o pipefail
out="${PIECE_OUT:-${OUT_DIR:-.}/73-advice}"
mkdir -p "$out"
skip=" ${ADVICE_SKIP:-} "
profiles=()
prof() {  # name target args...: profile into $out/name.profile.json
  local name=$1 target=$2
  shift 2
  [[ "$skip" == *" $name "* ]] && return
  local start=$(date +%s)
  python3 -m rooflinectl profile "$target" -o "$out/$name.profile.json" --force --top 5 "$@" > "$out/$name.profile.txt" 2>&1
  echo "== profile $name ($target): exit $? in $(( $(date +%s) - start )) s"
  tail -3 "$out/$name.profile.txt"
  [ -f "$out/$name.profile.json" ] && profiles+=("$name=$out/$name.profile.json")
}
ADVICE_MODEL=gpt2 prof gpt2 scripts/advice_models.py:step --warmup 2 --iters 5
prof llama examples/real/llama_train.py -- --layers 4 --hidden 1024 --batch 4 --seq 512 --warmup 2 --steps 3
prof mixtral examples/real/mixtral_forward.py -- --layers 4 --hidden 1024 --batch 4 --seq 512 --warmup 2 --steps 3
prof moe examples/real/moe_layer.py -- --impl loop --tokens 4096 --dim 1024 --hidden 2048 --warmup 2 --steps 3
ADVICE_MODEL=vit ADVICE_LAYERS=4 prof vit scripts/advice_models.py:step --warmup 2 --iters 5
if [ -f "$out/gpt2.profile.json" ]; then
  echo "== the first screen at 80 columns (GPT-2 eager forward)"
  COLUMNS=80 python3 -m rooflinectl advise "$out/gpt2.profile.json" | head -24
fi
python3 scripts/advice_check.py report "${profiles[@]}" --json "$out/advice_shown.json"
pick() { for p in "${profiles[@]}"; do [[ " $* " == *" ${p%%=*} "* ]] && echo "$p"; done; }
verify() {  # json names...: advise --verify on these profiles
  local json=$1 start=$(date +%s)
  shift
  local chosen=($(pick "$@"))
  [ ${#chosen[@]} -eq 0 ] && return
  python3 scripts/advice_check.py report "${chosen[@]}" --verify-only --json "$out/$json" --markdown "$out"
  echo "== advice_check --verify $*: exit $? in $(( $(date +%s) - start )) s"
}
verify verify_e2e.json gpt2 moe  # first: the end-to-end checks compare with these
[[ "$skip" == *" e2e "* ]] && { verify verify_rest.json llama mixtral vit; exit 0; }
timing() {  # file env...: one TIMING line of scripts/advice_models.py
  local file=$1
  shift
  env "$@" ADVICE_STEPS=20 python3 scripts/advice_models.py time > "$out/$file" 2>&1 || tail -3 "$out/$file"
}
timing gpt2.base.timing ADVICE_MODEL=gpt2
timing gpt2.padded.timing ADVICE_MODEL=gpt2 ADVICE_VOCAB=50304
timing gpt2.act-compiled.timing ADVICE_MODEL=gpt2 ADVICE_COMPILE_ACT=1
if [ -f "$out/moe.profile.json" ]; then
  python3 examples/real/moe_layer.py --impl loop --tokens 4096 --dim 1024 --hidden 2048 --warmup 3 --steps 20 > "$out/moe.loop.timing" 2>&1
  python3 examples/real/moe_layer.py --impl grouped --tokens 4096 --dim 1024 --hidden 2048 --warmup 3 --steps 20 > "$out/moe.grouped.timing" 2>&1
fi
cmp() { python3 scripts/advice_check.py compare --report "$out/verify_e2e.json" "$@"; }
cmp --name gpt2 --rule gemm.alignment --before "$out/gpt2.base.timing" --after "$out/gpt2.padded.timing"
cmp --name gpt2 --rule fusion.memory-chain --subject mlp.act --before "$out/gpt2.base.timing" \
  --after "$out/gpt2.act-compiled.timing"
[ -f "$out/moe.profile.json" ] && cmp --name moe --rule moe.grouped-gemm --before "$out/moe.loop.timing" --after "$out/moe.grouped.timing"
verify verify_rest.json llama mixtral vit
exit 0
