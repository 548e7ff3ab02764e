#!/usr/bin/env bash
# What nn.Module scopes cost a launch-bound step (issues 9 and 15), fast scopes (_RecordFunctionFast)
# against the dispatched record-function ops they replaced, on the GPU machine (Python 3.12:
# the sys.monitoring path, which the CPU machine's Python 3.11 cannot run):
# 1. scripts/bench_module_scopes.py: per module call and per enter + exit under a CPU profiler
#    recording shapes; the many-small-modules CPU script's profiled step.
# 2. Eager ResNet-50 training (batch 64, 3 warm-up + 5 timed steps): its own CUDA-event TIMING line
#    run plain, under `rooflinectl profile` as is (fast scopes), with op scopes and with no scopes
#    (scripts/profile_variant.py), alternating in two rounds (SCOPES_ROUNDS=N for more: the host's
#    speed varied by 45% between rounds on 2026-11-30, docs/benchmarks/steady-state.md).
# Run it with the other GPU idle (the step is host-bound). Expected runtime: about 110 s (25 s of
# micro-benchmark, 6 profiled and 2 plain ResNet-50 runs).
set -u -o pipefail
out="${PIECE_OUT:?PIECE_OUT must be set}"
python3 scripts/bench_module_scopes.py --repeats 5 --profiles 1 2>&1 | grep -v USDT | tee "$out/bench.txt"
args=(examples/real/resnet_train.py --batch 64 --warmup 3 --steps 5)
for round in $(seq 1 "${SCOPES_ROUNDS:-2}"); do
  python3 "${args[@]}" > "$out/plain.$round.log" 2>&1 || echo "plain: exit $?"
  python3 -m rooflinectl profile "${args[0]}" -o "$out/fast.$round.profile.json" -q -- "${args[@]:1}" > "$out/fast.$round.log" 2>&1 || echo "fast: exit $?"
  python3 scripts/profile_variant.py op-scopes "${args[0]}" -o "$out/ops.$round.profile.json" -q -- "${args[@]:1}" > "$out/ops.$round.log" 2>&1 || echo "ops: exit $?"
  python3 scripts/profile_variant.py no-modules "${args[0]}" -o "$out/none.$round.profile.json" -q -- "${args[@]:1}" > "$out/none.$round.log" 2>&1 || echo "none: exit $?"
done
python3 - "$out" <<'PY'
import glob, json, os, statistics, sys
out = sys.argv[1]
rounds = sorted({p.rsplit(".", 2)[-2] for p in glob.glob(os.path.join(out, "plain.*.log"))}, key=int)
print("| run | round | step median (CUDA events) | vs plain (same round) | distinct module paths |\n|---|---|---:|---:|---:|")
paths = {}
for rnd in rounds:
    plain = None
    for kind in ("plain", "fast", "ops", "none"):
        line = next((l for l in open(os.path.join(out, f"{kind}.{rnd}.log"), errors="replace") if l.startswith("TIMING ")), None)
        if line is None:
            print(f"| {kind} | {rnd} | no TIMING line | | |")
            continue
        ms = statistics.median(json.loads(line[7:])["iter_ms"])
        plain = ms if kind == "plain" else plain
        path = os.path.join(out, f"{kind}.{rnd}.profile.json")
        if os.path.exists(path):
            table = json.load(open(path))["kernels"]
            column = table["columns"].index("module")
            paths[kind, rnd] = {row[column] for row in table["rows"] if row[column]}
        found = len(paths.get((kind, rnd), ())) if kind != "plain" else ""
        print(f"| {kind} | {rnd} | {ms:.2f} ms | {'' if plain is None else format(ms / plain - 1, '+.1%')} | {found} |")
for rnd in rounds:
    print(f"round {rnd}: fast and op scopes give the same module paths: {paths.get(('fast', rnd)) == paths.get(('ops', rnd))}"
          " (expect True; no-modules: 0 paths, except optimizer rows)")
PY
