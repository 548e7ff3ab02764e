#!/usr/bin/env bash
# torch.compile under rooflinectl (issue 8): GPT-2 small forward (bf16, 8x1024) and a ResNet-50
# training step (bf16 autocast, channels-last, batch 64), each compiled in default and
# reduce-overhead modes: outputs plain vs profiled, known-cost and owner shares, kernel-time
# distortion against a bare torch.profiler. Expected runtime: about 3 minutes (four compiles;
# the second and third run of each reuse Inductor's cache). COMPILE_ONLY="gpt2" or "resnet" and COMPILE_MODES="reduce-overhead" limit it.
set -u
printf '| date | device | workload | mode | outputs equal | known cost | known + owner | known + module | inductor | distortion |\n|---|---|---|---|---|---|---|---|---|---|\n' > "$PIECE_OUT/compile.md"
for mode in ${COMPILE_MODES:-default reduce-overhead}; do
  if [ "${COMPILE_ONLY:-gpt2}" != resnet ]; then
    python3 scripts/compile_check.py "$PIECE_OUT" gpt2 "$mode" -- examples/real/gpt2_forward.py --layers 12 --batch 8 --seq 1024 || echo "gpt2 $mode failed"
  fi
  if [ "${COMPILE_ONLY:-resnet}" != gpt2 ]; then
    python3 scripts/compile_check.py "$PIECE_OUT" resnet50 "$mode" -- examples/real/resnet_train.py --batch 64 || echo "resnet50 $mode failed"
  fi
done
cat "$PIECE_OUT/compile.md"
python3 -m rooflinectl show "$PIECE_OUT/gpt2-reduce-overhead.profile.json" --top 8 2>/dev/null | head -20
