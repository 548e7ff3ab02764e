#!/usr/bin/env bash
# What the profiler costs a launch-bound program (issues 9 and 15): eager ResNet-50 training
# (batch 64, 3 warm-up + 5 timed steps) run plain, under three bare torch.profiler set-ups
# (scripts/record_trace.py: CPU + CUDA with shapes, as rooflinectl records; CPU + CUDA without
# shapes; CUDA alone) and under `rooflinectl profile` (as is; without NVML sampling; without
# nn.Module scopes, scripts/profile_variant.py; without both); each run's own CUDA-event TIMING
# line (median step) side by side, so the step-time overhead splits into the bare profiler's part
# and each part of rooflinectl's. Runs alternate in two rounds to expose drift. Run it with the
# other GPU idle: the step is host-bound, so another lane's CPU work moves it (OVERHEAD_ROUNDS=N for more
# rounds: the host's speed varied by 45% between rounds on 2026-11-30). Expected runtime:
# about 2.5 minutes.
set -u -o pipefail
out="${PIECE_OUT:?PIECE_OUT must be set}"
args=(examples/real/resnet_train.py --batch 64 --warmup 3 --steps 5)
for round in $(seq 1 "${OVERHEAD_ROUNDS:-2}"); do
  python3 "${args[@]}" > "$out/plain.$round.log" 2>&1 || echo "plain: exit $?"
  python3 scripts/record_trace.py "$out/bare.trace.json.gz" -- "${args[@]}" > "$out/bare.$round.log" 2>&1 || echo "bare: exit $?"
  python3 scripts/record_trace.py "$out/noshapes.trace.json.gz" --no-shapes -- "${args[@]}" > "$out/noshapes.$round.log" 2>&1 || echo "noshapes: exit $?"
  python3 scripts/record_trace.py "$out/cudaonly.trace.json.gz" --cuda-only -- "${args[@]}" > "$out/cudaonly.$round.log" 2>&1 || echo "cudaonly: exit $?"
  python3 -m rooflinectl profile "${args[0]}" -o "$out/rooflinectl.$round.profile.json" -q -- "${args[@]:1}" > "$out/rooflinectl.$round.log" 2>&1 || echo "rooflinectl: exit $?"
  ROOFLINECTL_NVML_PERIOD_S=0 python3 -m rooflinectl profile "${args[0]}" -o "$out/nonvml.$round.profile.json" -q -- "${args[@]:1}" > "$out/nonvml.$round.log" 2>&1 || echo "nonvml: exit $?"
  python3 scripts/profile_variant.py no-modules "${args[0]}" -o "$out/nomodules.$round.profile.json" -q -- "${args[@]:1}" > "$out/nomodules.$round.log" 2>&1 || echo "nomodules: exit $?"
  ROOFLINECTL_NVML_PERIOD_S=0 python3 scripts/profile_variant.py no-modules "${args[0]}" -o "$out/neither.$round.profile.json" -q -- "${args[@]:1}" > "$out/neither.$round.log" 2>&1 || echo "neither: exit $?"
done
rm -f "$out"/*.trace.json.gz
python3 - "$out" <<'PY'
import glob, json, os, statistics, sys
out = sys.argv[1]
print("| run | round | step median (CUDA events) | vs plain (same round) |\n|---|---|---:|---:|")
plain = {}
for kind in ("plain", "bare", "noshapes", "cudaonly", "rooflinectl", "nonvml", "nomodules", "neither"):
    for log in sorted(glob.glob(os.path.join(out, f"{kind}.*.log"))):
        rnd = log.rsplit(".", 2)[-2]
        line = next((l for l in open(log, errors="replace") if l.startswith("TIMING ")), None)
        if line is None:
            print(f"| {kind} | {rnd} | no TIMING line | |")
            continue
        ms = statistics.median(json.loads(line[7:])["iter_ms"])
        if kind == "plain":
            plain[rnd] = ms
        base = plain.get(rnd)
        print(f"| {kind} | {rnd} | {ms:.2f} ms | {'' if base is None else format(ms / base - 1, '+.1%')} |")
for path in sorted(glob.glob(os.path.join(out, "*.profile.json"))):
    s = json.load(open(path))["summary"]
    print(os.path.basename(path), {k: s.get(k) for k in ("iterations", "iteration_time_s", "device_idle_s",
                                                         "device_idle_unprofiled_s", "host_outside_ops_s")},
          "overhead/op", json.load(open(path))["metadata"].get("profiler_overhead_per_op_s"))
PY
