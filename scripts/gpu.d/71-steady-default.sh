#!/usr/bin/env bash
# The default `rooflinectl profile` (--profile-steps auto: setup + 5 iterations profiled, the rest
# timed without the profiler) against plain runs of the same scripts (issue 28):
# GPT-2 small bf16 eager forward (12 layers, batch 8 x 1024), a Llama-style training step (4 layers,
# hidden 1024, batch 4 x 512), a Mixtral-style MoE forward (2 layers, 8 experts top-2, batch 2 x 512),
# (the MoE layer of examples/real/moe_layer.py, no live marker: the estimate fallback, with --only moe-layer),
# ResNet-50 training (batch 32): 3 warm-up +
# 20 timed steps each; plus the GPT-2 forward replayed from a CUDA graph, and a 2,000-step small
# eager training loop (profile wall time vs plain). scripts/bench_steady_default.py prints the
# FIGURE and CHECK lines. Runtime: 199 s on an H200 (2026-12-02 00:24 UTC, one plain run per model);
# with the second plain run of the three host-bound models about 220-240 s: run it with
# PIECE_TIMEOUT_S=300 (each workload writes its figures as it ends, so a cut run keeps the first).
set -u -o pipefail
out="${PIECE_OUT:?PIECE_OUT must be set}"
# STEADY_DEFAULT_ARGS replaces the default arguments, e.g. "--only gpt2-forward loop".
# shellcheck disable=SC2086
python3 scripts/bench_steady_default.py "$out" --device cuda ${STEADY_DEFAULT_ARGS:-}
