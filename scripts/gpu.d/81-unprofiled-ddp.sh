#!/usr/bin/env bash
# `profile --nproc-per-node 2 --profile-steps 8` of DDP GPT-2 small training (issue 15), on an
# nvidia-h200-x2 machine, alone (it needs both GPUs): two rounds of plain torchrun run then
# profiled run, 3 warm-up + 20 timed steps; scripts/bench_unprofiled.py compares each rank's
# un-profiled step time with its own CUDA events. Runtime on the H200 machine: 112 and 116 s (2026-11-30).
set -u -o pipefail
out="${PIECE_OUT:?PIECE_OUT must be set}"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
python3 scripts/bench_unprofiled.py "$out" --rounds 2 --only ddp-gpt2-train
grep -av "^USDT" "$out/ddp-gpt2-train.profiled1.log" | grep -v "^TIMING" | head -16 | cut -c1-220
