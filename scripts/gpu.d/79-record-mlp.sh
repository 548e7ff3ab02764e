#!/usr/bin/env bash
# Re-records tests/data/h200_mlp.profile.json (issue 33: the committed one was written before
# 6aa8882, its window shorter than its busy time) with the current code, the way 40-plot made it
# (`rooflinectl profile examples/mlp.py -- --batch 4096`, measured roofs), and redraws the README
# chart from it. Runs the CPU tests that read the file against the new one (on this machine's copy
# only; the committed file is put back), so the lead sees what changes before copying it.
# Writes into $PIECE_OUT: h200_mlp.profile.json, roofline-h200-mlp.png (docs/images/),
# show.txt, advise.txt, tests.txt. Expected runtime: about 60-100 s on an H200 (25 s of it the
# roofs, when no earlier piece measured them into the cache).
# The lead copies: h200_mlp.profile.json -> tests/data/, roofline-h200-mlp.png -> docs/images/.
set -u -o pipefail
out="${PIECE_OUT:-${OUT_DIR:-.}/79-record-mlp}"
mkdir -p "$out"
rc=0
rl() { if command -v rooflinectl >/dev/null; then rooflinectl "$@"; else python3 -m rooflinectl "$@"; fi; }

echo "== roofs: measured once into the cache (${ROOFLINECTL_CACHE_DIR:-default cache}), reused if there"
rl ceilings --measure > "$out/ceilings.txt" 2>&1 || { echo "CHECK FAILED: ceilings --measure exit $?"; rc=1; }
tail -n 25 "$out/ceilings.txt"

echo "== rooflinectl profile examples/mlp.py -o $out/h200_mlp.profile.json -- --batch 4096"
rl profile examples/mlp.py -o "$out/h200_mlp.profile.json" -- --batch 4096 > "$out/profile.txt" 2>&1
prc=$?
grep -v '^USDT' "$out/profile.txt" | tail -n 40
[ $prc = 0 ] || { echo "CHECK FAILED: profile exit $prc"; exit 1; }

python3 - "$out/h200_mlp.profile.json" <<'PY' || rc=1
import json, sys
data = json.load(open(sys.argv[1]))
s, m = data["summary"], data["metadata"]
print("FIGURE mlp " + json.dumps({k: s.get(k) for k in (
    "iterations", "window_s", "device_busy_s", "device_idle_s", "total_kernel_time_s",
    "known_cost_time_share", "launches", "iteration_time_s")}))
print("FIGURE mlp ceilings_source", m.get("ceilings_source"), "torch", m.get("torch"), "device", m.get("device_name"))
ok = 0 < s["device_busy_s"] <= s["window_s"] * 1.0001 and s["known_cost_time_share"] > 0.9
print("CHECK " + ("ok" if ok else "FAILED") + f": busy {s['device_busy_s'] * 1e3:.3f} ms <= window "
      f"{s['window_s'] * 1e3:.3f} ms, known-cost share {s['known_cost_time_share']:.3f} > 0.9")
sys.exit(0 if ok else 1)
PY

echo "== the README chart and the other views of it"
rl plot "$out/h200_mlp.profile.json" -o "$out/roofline-h200-mlp.png" --dpi 150 || { echo "CHECK FAILED: plot"; rc=1; }
COLUMNS=120 rl show "$out/h200_mlp.profile.json" --top 12 > "$out/show.txt" 2>&1 || rc=1
cat "$out/show.txt"
COLUMNS=120 rl advise "$out/h200_mlp.profile.json" > "$out/advise.txt" 2>&1
echo "-- advise exit $? (a finding of warning severity exits non-zero only with --fail-on)"
head -n 30 "$out/advise.txt"

echo "== the CPU tests that read tests/data/h200_mlp.profile.json, against the new file"
keep=$(mktemp)
cp tests/data/h200_mlp.profile.json "$keep"
cp "$out/h200_mlp.profile.json" tests/data/h200_mlp.profile.json
timeout 100 python3 -m pytest -q -p no:cacheprovider -m 'not gpu' --durations=5 tests/test_user_conventions.py \
  tests/test_api_conventions.py tests/test_cli_conventions.py tests/test_report.py tests/test_report_browser.py \
  tests/test_robust_fuzz.py tests/test_plot.py -k 'mlp or MLP or recorded or report or junit or markdown or show_fits or repr' \
  > "$out/tests.txt" 2>&1
trc=$?
cp "$keep" tests/data/h200_mlp.profile.json && rm -f "$keep"
grep -E "^(FAILED|ERROR)|passed|failed|^[0-9.]+s (call|setup)" "$out/tests.txt" | tail -n 30
echo "CHECK $([ $trc = 0 ] && echo ok || echo FAILED): the tests that read the profile, on the new one: exit $trc (124: over 100 s)"
[ $trc = 0 ] || rc=1
ls -la "$out"
exit $rc
