#!/usr/bin/env bash
# Steady state of plain scripts profiled with no region (issue 9): GPT-2 small forward (12 layers,
# batch 8, seq 1024: 3 warm-up + 5 timed forwards) and ResNet-50 training (batch 64: 3 warm-up +
# 5 timed steps). Prints each table, the summary (iterations, how found, per-iteration time, the
# setup line), the script's own TIMING line (CUDA events around each timed iteration) and the
# advice rule ids, and checks: per-iteration time within 5% of the CUDA events' median; the
# weight upload in setup, not in the table. Expected runtime: about 60-90 s on an H200.
set -u -o pipefail
out="${PIECE_OUT:-${OUT_DIR:-.}/65-steady}"
mkdir -p "$out"
rc=0
run() {  # name script args...
  local name=$1 script=$2
  shift 2
  echo "== $name: rooflinectl profile $script -- $*"
  python3 -m rooflinectl profile "$script" -o "$out/$name.profile.json" --top 12 -- "$@" > "$out/$name.txt" 2>&1
  echo "-- profile exit $?"
  grep -v '^USDT' "$out/$name.txt"
  python3 -m rooflinectl advise "$out/$name.profile.json" --format json > "$out/$name.advice.json"
  python3 - "$out/$name.profile.json" "$out/$name.txt" "$out/$name.advice.json" <<'PY' || rc=1
import json, statistics, sys
profile, log, advice = sys.argv[1:]
s = json.load(open(profile))["summary"]
timing = next(json.loads(l[7:]) for l in open(log) if l.startswith("TIMING "))
events_ms = statistics.median(timing["iter_ms"])
ours_ms = s["iteration_time_s"] * 1e3
last_ms = statistics.median(s["iteration_times_s"][-len(timing["iter_ms"]):]) * 1e3
keys = ("iterations_method", "iterations_marker", "iterations_found", "warmup_iterations", "iterations",
        "iteration_time_s", "window_s", "device_idle_s", "device_idle_unprofiled_s", "host_sync_calls",
        "host_sync_idle_s", "host_outside_ops_s", "setup_kernel_time_s", "setup_transfer_time_s",
        "setup_transfer_bytes", "setup_wall_s", "compile_s")
print("SUMMARY " + json.dumps({k: s.get(k) for k in keys}))
print(f"CHECK per-iteration {ours_ms:.3f} ms (median of {s['iterations']} counted) vs CUDA events "
      f"{events_ms:.3f} ms (median of {len(timing['iter_ms'])} timed): {100 * (ours_ms / events_ms - 1):+.1f}%; "
      f"last {len(timing['iter_ms'])} counted: {last_ms:.3f} ms ({100 * (last_ms / events_ms - 1):+.1f}%)")
findings = json.load(open(advice))["findings"]
print("ADVICE " + json.dumps([[f["rule_id"], round(f["est_saving_s"] * 1e3, 3), f["subject"][:60]] for f in findings]))
ok = abs(ours_ms / events_ms - 1) <= 0.05 and s["iterations_method"] not in ("none", "off")
print("CHECK " + ("ok" if ok else "FAILED: per-iteration time off by more than 5%, or no iterations found"))
sys.exit(0 if ok else 1)
PY
}
run gpt2 examples/real/gpt2_forward.py --layers 12 --batch 8 --seq 1024
run resnet examples/real/resnet_train.py --batch 64 --warmup 3 --steps 5
exit $rc
