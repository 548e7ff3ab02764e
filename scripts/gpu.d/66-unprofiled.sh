#!/usr/bin/env bash
# `profile --profile-steps N` on one GPU (issue 9): eager ResNet-50 training (batch 64) and GPT-2
# small forwards (12 layers, batch 8, seq 1024), 3 warm-up + 20 timed steps, N = 8, two rounds of
# plain run then profiled run. scripts/bench_unprofiled.py compares the un-profiled step time
# rooflinectl measured after its profiler stopped with the script's own CUDA events (same run and
# plain run, same steps). Runtime on the H200 machine: 138 and 167 s (2026-11-30, beside another lane).
set -u -o pipefail
out="${PIECE_OUT:?PIECE_OUT must be set}"
# UNPROFILED_ARGS replaces the default arguments, e.g. "--rounds 4 --only resnet50-train --pin 2-5".
# shellcheck disable=SC2086
python3 scripts/bench_unprofiled.py "$out" ${UNPROFILED_ARGS:---rounds 2 --only resnet50-train gpt2-forward}
grep -av "^USDT" "$out/resnet50-train.profiled1.log" | grep -v "^TIMING" | head -12 | cut -c1-220
