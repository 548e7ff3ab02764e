#!/usr/bin/env bash
# A raw trace of the Llama-style training step for CPU test data (issue 29's "recorded H200 traces
# from the Llama-style and ResNet-50 runs"): examples/real/llama_train.py, 2 layers, hidden 1024,
# batch 2 x 512, bf16 autocast, fused AdamW, 2 warm-up + 3 steps, under a bare torch.profiler
# (scripts/record_trace.py). Writes $PIECE_OUT/llama_train_eager.trace.json.gz and its meta.json;
# the lead copies them to tests/data/h200_real/. About 30 s on an H200.
set -u -o pipefail
out="${PIECE_OUT:?PIECE_OUT must be set}"
python3 scripts/record_trace.py "$out/llama_train_eager.trace.json.gz" -- examples/real/llama_train.py \
  --layers 2 --hidden 1024 --batch 2 --seq 512 --vocab 32000 --warmup 2 --steps 3 2>&1 | grep -E "TIMING|OUTPUT|RECORDED|Error" | cut -c1-300
ls -la "$out"
