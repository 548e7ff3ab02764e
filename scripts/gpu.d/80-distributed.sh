#!/usr/bin/env bash
# Multi-GPU (issue 15), on an nvidia-h200-x2 machine, alone (GPU_PIECES=80: it needs both GPUs).
# Expected runtime: about 180 s (the link measured once, ~15 s; four torchrun runs of GPT-2 small,
# ~25-35 s each: one un-profiled, one under a bare torch.profiler, three profiled with DDP buckets of 1, 25 and 400 MB).
# - `rooflinectl ceilings --measure`: NCCL all-reduce bus bandwidth between the GPUs per message size
#   (added to a cached measurement that lacks it) and the topology, as JSON;
# - the un-profiled DDP step (TIMING lines per rank), then `rooflinectl profile --nproc-per-node 2`
#   of the same step at three bucket sizes (rank profiles b<MB>.rank<R>.json);
# - scripts/bench_distributed.py: step time per rank against the un-profiled run (target 5%),
#   all-reduce transfer bandwidth against the link, exposed communication per bucket size.
# Writes $PIECE_OUT/distributed.md (the lead copies it to docs/benchmarks/distributed.md),
# distributed.json, the profiles, set.png (the chart with its link panel) and the logs.
set -u -o pipefail
out="${PIECE_OUT:?PIECE_OUT must be set}"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
args=(--model gpt2 --layers 12 --batch 8 --seq 1024 --warmup 3 --steps 5)
nvidia-smi topo -m > "$out/topo.txt" 2>&1
python3 -m rooflinectl ceilings --measure --format json > "$out/ceilings.json" || echo "ceilings: exit $?"
python3 -m torch.distributed.run --standalone --nproc-per-node 2 examples/real/ddp_train.py "${args[@]}" --bucket-mb 25 \
  > "$out/plain.log" 2>&1 || echo "plain run: exit $?"
grep -a "TIMING" "$out/plain.log" | cut -c1-300
# the same step under a bare torch.profiler (CPU + CUDA, shapes: what rooflinectl records), to split
# the profiled step's overhead into the profiler's part and rooflinectl's
python3 -m torch.distributed.run --standalone --nproc-per-node 2 scripts/record_trace.py "$out/bare.rank{RANK}.trace.json.gz" \
  -- examples/real/ddp_train.py "${args[@]}" --bucket-mb 25 > "$out/bare.log" 2>&1 || echo "bare profiler run: exit $?"
grep -a "TIMING" "$out/bare.log" | cut -c1-300
rm -f "$out"/bare.rank*.trace.json.gz
for mb in 25 1 400; do
  python3 -m rooflinectl profile --nproc-per-node 2 -o "$out/b$mb.rank{rank}.json" --top 8 \
    examples/real/ddp_train.py -- "${args[@]}" --bucket-mb "$mb" > "$out/b$mb.log" 2>&1 || echo "profile bucket $mb: exit $?"
done
grep -av "^USDT" "$out/b25.log" | tail -45 | cut -c1-250
python3 -m rooflinectl advise "$out"/b25.rank*.json --format markdown > "$out/b25.advice.md" 2>&1 || true
head -20 "$out/b25.advice.md"
python3 -m rooflinectl plot "$out"/b25.rank*.json -o "$out/set.png" --dpi 90 || echo "plot: exit $?"
python3 scripts/bench_distributed.py "$out"
