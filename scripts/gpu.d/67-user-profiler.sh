#!/usr/bin/env bash
# Issue 16 case 2 on the GPU: a script that starts its own torch.profiler (schedule, prof.step(),
# export_chrome_trace) runs under rooflinectl without a crash, its export becomes rooflinectl's
# trace of the run (ProfilerStep#N included), and kineto's USDT lines stay off the screen.
# Also writes the annotated --save-trace of the run and `show --by module` at 80 and 120 columns.
# Expected runtime: about 40 s on the H200 (GPT-2 2 layers, batch 4 x 512, bf16, 2 warm-up + 5 steps).
set -u
out="${PIECE_OUT:?PIECE_OUT must be set}"
python3 -m rooflinectl profile examples/real/gpt2_forward.py -o "$out/userprof.profile.json" --top 8 \
  --save-trace "$out/userprof.trace.json.gz" -- --layers 2 --batch 4 --seq 512 --warmup 2 --steps 5 \
  --user-profiler "$out/user_export.json" > "$out/profile.stdout" 2> "$out/profile.stderr"
echo "profile exit $? (expect 0; 139 was the segfault)"
echo "USDT lines on stderr: $(grep -c USDT "$out/profile.stderr") (expect 0)"
tail -3 "$out/profile.stderr"
python3 - "$out" <<'PY'
import gzip, json, sys
out = sys.argv[1]
export = json.load(open(f"{out}/user_export.json"))
names = {e.get("name") for e in export.get("traceEvents", [])}
steps = sorted(n for n in names if str(n).startswith("ProfilerStep#"))
kernels = sum(1 for e in export.get("traceEvents", []) if e.get("cat") == "kernel")
print("script's export: rooflinectl note kept" if "rooflinectl_note" in export else "script's export: full trace",
      f"| ProfilerStep annotations: {steps} | kernel events: {kernels}  (expect steps 0-7, kernels > 0)")
trace = json.load(gzip.open(f"{out}/userprof.trace.json.gz"))
annotated = [e for e in trace["traceEvents"] if "rooflinectl.flops" in e.get("args", {})]
print(f"--save-trace: {len(annotated)} annotated kernel events, summary launches {trace['rooflinectl']['summary']['launches']}")
PY
for w in 80 120; do
  COLUMNS=$w python3 -m rooflinectl show "$out/userprof.profile.json" --by module --top 10 > "$out/show_by_module_$w.txt"
  COLUMNS=$w python3 -m rooflinectl show "$out/userprof.profile.json" --top 10 > "$out/show_$w.txt"
done
cat "$out/show_80.txt"
