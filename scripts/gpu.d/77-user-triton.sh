#!/usr/bin/env bash
# A user's own kernels on the roofline without extra work (issue 37): examples/user_triton.py
# (Triton tutorial kernels with no launch_metadata: a vector add over 2^26 fp32, a fused row
# softmax over [16384, 4096] bf16, 5 calls each, a strided add, a torch.library op wrapping a
# Triton kernel) profiled; the same run under --counters ncu (DRAM bytes: analytic/ncu per
# kernel); the advice each kernel gets; an inline C++/CUDA extension op when it builds in time
# (built in the background, at most EXT_BUILD_S seconds); the hook's host cost per launch.
# Prints FIGURE/CHECK lines. Expected runtime: about 100-150 s on an H200.
set -u -o pipefail
out="${PIECE_OUT:-${OUT_DIR:-.}/77-user-triton}"
mkdir -p "$out"
export PATH="$PATH:/usr/local/cuda/bin"
export TORCH_EXTENSIONS_DIR="${TORCH_EXTENSIONS_DIR:-/tmp/rooflinectl-torch-ext}"
rl() { python3 -m rooflinectl "$@"; }
start=$(date +%s)
step() { echo "-- [$(( $(date +%s) - start )) s] $*"; }

step "inline C++/CUDA extension: building in the background (at most ${EXT_BUILD_S:-100} s)"
timeout "${EXT_BUILD_S:-100}" python3 examples/user_triton.py --build-ext > "$out/ext-build.log" 2>&1 &
build_pid=$!

step "profile examples/user_triton.py"
rl profile examples/user_triton.py -o "$out/user.profile.json" --top 12 > "$out/user.txt" 2>&1
echo "profile exit $?"
grep -v '^USDT' "$out/user.txt" | tail -20
rl advise "$out/user.profile.json" --format markdown > "$out/user.advice.md" 2>&1

step "the same under --counters ncu"
rl profile examples/user_triton.py --counters ncu --ncu-timeout 90 -o "$out/user-ncu.profile.json" --top 12 \
  > "$out/user-ncu.txt" 2>&1
echo "counters profile exit $?"
grep -v '^USDT' "$out/user-ncu.txt" | tail -8

step "figures"
python3 scripts/user_kernels_figures.py "$out/user.profile.json" --counters "$out/user-ncu.profile.json" \
  | tee "$out/figures.txt"

step "hook cost per launch"
python3 scripts/bench_triton_hook.py --launches 3000 | tee -a "$out/figures.txt"

step "extension"
if wait "$build_pid" && grep -q "extension built" "$out/ext-build.log"; then
  rl profile examples/user_triton.py -o "$out/ext.profile.json" --top 8 -- --ext --calls 3 > "$out/ext.txt" 2>&1
  echo "extension profile exit $?"
  grep -v '^USDT' "$out/ext.txt" | tail -10
  python3 scripts/user_kernels_figures.py "$out/ext.profile.json" | grep -E "axpb|scale" | tee -a "$out/figures.txt"
else
  echo "CHECK extension: not built in time (or failed): $(tail -3 "$out/ext-build.log" | tr '\n' ' ')"
fi
step "done"
