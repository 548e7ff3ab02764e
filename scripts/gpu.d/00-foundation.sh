#!/usr/bin/env bash
# Foundation on the GPU: distortion and coverage figures, golden traces, the CLI on two examples.
set -u
python3 scripts/bench_foundation.py "$PIECE_OUT"
python3 -m rooflinectl profile examples/mlp.py -o "$PIECE_OUT/mlp.profile.json" --save-capture "$PIECE_OUT/h200_mlp_bf16.capture.json.gz" -- --batch 256 --width 2048
python3 -m rooflinectl show "$PIECE_OUT/mlp.profile.json" --by op --top 10
python3 -m rooflinectl profile examples/train_step.py:step --iters 3 -o "$PIECE_OUT/fn.profile.json" --top 5 || echo "function mode exit $?"
