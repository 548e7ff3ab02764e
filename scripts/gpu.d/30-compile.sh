#!/usr/bin/env bash
# torch.compile under rooflinectl (issue 8): GPT-2 small forward (bf16, 8x1024) and a ResNet-50
# training step (bf16 autocast, channels-last, batch 64), compiled in default, reduce-overhead and
# max-autotune modes: outputs plain vs profiled, known-cost and owner shares, kernel-time
# distortion against a bare torch.profiler (median of PAIRS alternating pairs, with the bare runs'
# own spread). COMPILE_CASES lists workload:mode:pairs[:plain runs] (default below; max-autotune
# runs the plain script twice, each with its own Inductor cache, to see whether plain runs agree). Expected runtime: about
# 30 s per run after the first compile of a case (max-autotune's first compile: 1-3 minutes).
set -u
printf '| date | device | workload | mode | outputs equal | known cost | known + owner | known + module | inductor | distortion | pairs | bare spread |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n' > "$PIECE_OUT/compile.md"
for case in ${COMPILE_CASES:-gpt2:default:1 resnet50:default:1 gpt2:reduce-overhead:3 resnet50:reduce-overhead:1 gpt2:max-autotune:1:2}; do
  IFS=: read -r name mode pairs plain_runs <<<"$case"
  if [ "$name" = gpt2 ]; then
    args=(examples/real/gpt2_forward.py --layers 12 --batch 8 --seq 1024)
  else
    args=(examples/real/resnet_train.py --batch 64)
  fi
  python3 scripts/compile_check.py "$PIECE_OUT" "$name" "$mode" --repeats "$pairs" --plain-runs "${plain_runs:-1}" -- "${args[@]}" || echo "$name $mode failed"
done
cat "$PIECE_OUT/compile.md"
python3 -m rooflinectl show "$PIECE_OUT/gpt2-max-autotune.profile.json" --top 8 2>/dev/null | head -24
