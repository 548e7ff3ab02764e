#!/usr/bin/env bash
# One-off recording run on the GPU machine (device tool): raw traces of real workloads under a
# bare torch.profiler, for CPU test data and development; ncu CSV and NVML facts.
# Writes $OUT/rec.tar.gz. About 5 minutes on an nvidia-h200-x2.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD" NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
R="${OUT:-$PWD/out}/rec"; mkdir -p "$R"
log="$R/log.txt"
t() { local s=$(date +%s.%N); echo "== $*" | tee -a "$log"; timeout 170 "$@" >>"$log" 2>&1; echo "-- exit $? in $(python3 -c "print(round($(date +%s.%N)-$s,1))") s" | tee -a "$log"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv >>"$log" 2>&1
python3 -c 'import torch, triton, transformers, torchvision; print("torch", torch.__version__, "triton", triton.__version__, "transformers", transformers.__version__, "tv", torchvision.__version__, "gpus", torch.cuda.device_count())' >>"$log" 2>&1
G="--layers 2 --batch 4 --seq 512"
t python3 scripts/record_trace.py "$R/gpt2_fwd_eager.trace.json.gz" -- examples/real/gpt2_forward.py $G --warmup 3 --steps 5
t python3 examples/real/gpt2_forward.py $G --warmup 2 --steps 3 --user-profiler "$R/gpt2_fwd_userprof.trace.json"
t python3 scripts/record_trace.py "$R/gpt2_fwd_compiled.trace.json.gz" --inductor-costs -- examples/real/gpt2_forward.py $G --warmup 3 --steps 3 --compile default
t python3 scripts/record_trace.py "$R/gpt2_fwd_reduce_overhead.trace.json.gz" --inductor-costs -- examples/real/gpt2_forward.py $G --warmup 3 --steps 3 --compile reduce-overhead
t python3 scripts/record_trace.py "$R/resnet50_train_eager.trace.json.gz" -- examples/real/resnet_train.py --batch 32 --warmup 2 --steps 3
t python3 scripts/record_trace.py "$R/gpt2_train_eager.trace.json.gz" -- examples/real/gpt2_train.py $G --warmup 2 --steps 3
t python3 scripts/record_trace.py "$R/moe_loop.trace.json.gz" -- examples/real/moe_layer.py --impl loop --warmup 2 --steps 3
t python3 scripts/record_trace.py "$R/moe_grouped.trace.json.gz" -- examples/real/moe_layer.py --impl grouped --warmup 2 --steps 3
t torchrun --nproc-per-node 2 scripts/record_trace.py "$R/ddp_gpt2.rank{RANK}.trace.json.gz" -- examples/real/ddp_train.py --model gpt2 $G --warmup 2 --steps 3
t python3 scripts/probe_nvml.py
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,launch__grid_size,launch__block_size
for op in fadd fmul ffma dadd dmul dfma hadd hmul hfma; do M=$M,smsp__sass_thread_inst_executed_op_${op}_pred_on.sum; done
for s in bf16_dst_fp32 fp16 tf32_dst_fp32 fp8 int8; do M=$M,sm__ops_path_tensor_src_${s}.sum; done
M=$M,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,l1tex__t_bytes.sum
export PATH="$PATH:/usr/local/cuda/bin"
t bash -c "ncu --clock-control none --csv --page raw --print-units base --metrics '$M' python3 examples/mlp.py --batch 256 --width 1024 --steps 1 > '$R/ncu_mlp.csv' 2> '$R/ncu_mlp.err'"
t python3 scripts/record_trace.py "$R/mlp_small.trace.json.gz" -- examples/mlp.py --batch 256 --width 1024 --steps 1
gzip -f "$R"/*.trace.json 2>/dev/null
ls -la "$R" >> "$log"
grep -E "^(==|--|TIMING|RECORDED|Traceback|[A-Za-z]*Error)" "$log" | cut -c1-400
tar -C "$(dirname "$R")" -czf "$(dirname "$R")/rec.tar.gz" rec && rm -rf "$R"
