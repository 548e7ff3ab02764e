#!/usr/bin/env bash
# Counters decide the memory level (issue 29): `profile --counters ncu` now runs ncu twice, the
# cold run (caches flushed, every metric) and a warm one (--cache-control none, DRAM bytes only,
# one pass per launch). First the two loops of scripts/counters_warm_loop.py (16 MB: L2; 1 GiB:
# DRAM), then three real training scripts at small sizes (Llama-style, GPT-2, ResNet-50) and
# `validate` on each. FIGURE lines (scripts/counters_warm_figures.py): the warm run, the share of
# memory-bound time where the analytic level matches the counters' (target >= 90%), groups
# L2-served by counters and by the analytic guess, rows above their roof by more than 3%.
# Measured on the H200 (2026-12-02, ceilings cached): the two loops ~55 s; Llama-style 126 s; GPT-2
# 126 s; ResNet-50 294 s (about 250 sampling classes: 235 s of cold ncu replays, 40 s warm). All four
# do not fit one device call: run `GPU_PIECES=75 COUNTERS_WARM_MODELS="llama gpt2" PIECE_TIMEOUT_S=540
# GPU_TESTS=0 bash scripts/gpu-check`, then COUNTERS_WARM_MODELS=resnet COUNTERS_WARM_LOOPS=0 (cut at
# COUNTERS_WARM_RESNET_S, default 470; the others at 200 s). COUNTERS_WARM_LAUNCHES=N caps the launches
# ncu measures per script (default 1000; the warm run gets 4 times it; the 2026-12-02 16:17 ResNet-50
# run used 2000; 120 for ResNet-50 measured only its setup launches on 2026-12-02, and profile now
# refuses such a cap). Each script's capture file comes back too, so the analytic level can be compared
# with the counters again offline (scripts/counters_levels_offline.py).
# Again on 2026-12-02 14:29 UTC with a group's own warm figures only (attribution/counters.py): loops,
# Llama-style and GPT-2 in one call (311 s of piece, fresh machine), ResNet-50 in another (329 s),
# ResNet-50 again on a fresh machine (374 s: 408 s for the call).
# Again at 16:17 UTC with the warm run measuring one launch of every row (capture/ncu/sampling.py):
# ResNet-50 without the loops 318 s on a fresh machine (cold run 204 s, warm 50 s); loops, Llama-style
# and GPT-2 296 s (warm runs 30.5 and 24.5 s).
# Again at 19:08 UTC with tensors keyed by address (capture/run/tensor_accesses.py), one machine:
# Llama-style and GPT-2 without the loops 284 s (fresh machine), ResNet-50 298 s.
set -u -o pipefail
out="${PIECE_OUT:-${OUT_DIR:-.}/75-counters-warm}"
mkdir -p "$out"
export PATH="$PATH:/usr/local/cuda/bin"
rl() { python3 -m rooflinectl "$@"; }
RL=(python3 -m rooflinectl)  # for `timeout`, which cannot run a shell function
start=$(date +%s)
step() { echo "-- [$(( $(date +%s) - start )) s] $*"; }
rc=0

step "ceilings --measure (cached when piece 10 ran: the L2 roof the levels need)"
rl ceilings --measure --budget-s 40 > "$out/ceilings.txt" 2>&1 || echo "ceilings: exit $?"
grep -E "^memory\.(dram|l2) " "$out/ceilings.txt" | head -4

loop() {  # small | big
  step "loop $1: scripts/counters_warm_loop.py:$1 --counters ncu"
  timeout 60 "${RL[@]}" profile "scripts/counters_warm_loop.py:$1" --counters ncu --warmup 2 --iters 4 \
    -o "$out/loop-$1.profile.json" --top 4 > "$out/loop-$1.txt" 2>&1 || { echo "loop $1: exit $?"; tail -5 "$out/loop-$1.txt"; rc=1; }
  [ -f "$out/loop-$1.profile.json" ] && python3 - "$1" "$out/loop-$1.profile.json" <<'PY' || rc=1
import sys
from rooflinectl.outputs.profile_file import load_profile
name, path = sys.argv[1:]
data = load_profile(path)
warm = (data.summary.get("counters") or {}).get("warm")
print(f"FIGURE loop {name} warm run: {warm}")
rows = data.kernels[data.kernels["op"].isin(["aten::mul_", "aten::add_"])]
for r in rows.itertuples():
    print(f"FIGURE loop {name} {r.op} {r.shapes}: bytes {r.bytes / 1e6:.1f} MB, cold DRAM {r.dram_bytes / 1e6:.1f} MB, "
          f"warm DRAM {r.dram_bytes_warm / 1e6:.1f} MB; level {r.memory_level} ({r.memory_level_source}; analytic "
          f"{r.memory_level_analytic}); efficiency {r.efficiency:.3f}")
want = "l2" if name == "small" else "dram"
ok = len(rows) == 2 and (rows["memory_level_source"] == "counters").all() and (rows["memory_level"] == want).all()
print(f"CHECK loop {name}: " + ("ok" if ok else f"FAILED: expected every row held to {want} by the counters"))
sys.exit(0 if ok else 1)
PY
}
if [ "${COUNTERS_WARM_LOOPS:-1}" = 1 ]; then  # COUNTERS_WARM_LOOPS=0: the models only (a call with ResNet-50)
  loop small
  loop big
fi

model() {  # name launches seconds script args...
  local name=$1 launches=$2 seconds=$3 script=$4
  shift 4
  step "$name: rooflinectl profile examples/real/$script --counters ncu -- $*"
  # the capture file (the trace with every op's tensor reads and writes) lets the analytic level be
  # compared with the counters again offline: scripts/counters_levels_offline.py
  timeout "$seconds" "${RL[@]}" profile "examples/real/$script" --counters ncu --ncu-launch-count "$launches" \
    -o "$out/$name.profile.json" --save-capture "$out/$name.capture.json" --top 8 -- "$@" \
    > "$out/$name.txt" 2>&1 || { echo "$name profile: exit $?"; grep -v '^USDT' "$out/$name.txt" | tail -8; rc=1; }
  grep -E "^counters:" "$out/$name.txt" | grep -v "launches measured (" | head -6
  [ -f "$out/$name.profile.json" ] || return
  rl validate "$out/$name.profile.json" --format json > "$out/$name.validate.json" 2> "$out/$name.validate.err" \
    || echo "validate $name: exit $?"
  rl validate "$out/$name.profile.json" --format markdown --top 30 > "$out/$name.validate.md" 2>&1
  grep -E "^- (memory level|compared)" "$out/$name.validate.md"
  python3 scripts/counters_warm_figures.py "$name" "$out/$name.profile.json" || rc=1
}
for m in ${COUNTERS_WARM_MODELS:-llama gpt2 resnet}; do
  case $m in
    llama) model llama "${COUNTERS_WARM_LAUNCHES:-1000}" 200 llama_train.py --layers 2 --hidden 1024 --batch 4 --seq 512 --warmup 2 --steps 2 ;;
    gpt2) model gpt2 "${COUNTERS_WARM_LAUNCHES:-1000}" 200 gpt2_train.py --layers 2 --batch 4 --seq 512 --warmup 2 --steps 2 ;;
    resnet) model resnet "${COUNTERS_WARM_LAUNCHES:-1000}" "${COUNTERS_WARM_RESNET_S:-470}" resnet_train.py --batch 32 --warmup 2 --steps 2 ;;
  esac
done
step "done"
exit $rc
