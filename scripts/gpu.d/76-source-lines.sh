#!/usr/bin/env bash
# Source lines on real models (issue 35): `rooflinectl profile` with the default options (source
# capture on) and again with --no-source, on
#   gpt2      GPT-2 small forward (transformers, 12 layers, batch 8, seq 1024, bf16): GPU-bound
#   gpt2tiny  the same model at batch 1, seq 128: launch-bound, the worst case for a host cost
#   llama     a user-written training loop (examples/real/llama_train.py, 4 layers, batch 4, seq 512)
# Prints per model: FIGURE share of kernel time with a user source line, the top 5 rows with their
# source, the profiled step with vs without source capture (device time per iteration; distortion
# %) and the un-profiled step of both runs; the top of `show --by line`; the head of
# `advise --format github`; CHECKs: source share > 50% of kernel time, every located file is the
# user's (under examples/real), the un-profiled steps within 10% of each other. First, the host
# cost per torch call (scripts/bench_source_lines.py: about 10 s).
# Expected runtime: about 110-150 s on an H200 (6 profiles).
set -u -o pipefail
out="${PIECE_OUT:-${OUT_DIR:-.}/76-source-lines}"
mkdir -p "$out"
rc=0
profile() {  # name source-flag script args...
  local name=$1 flag=$2 script=$3
  shift 3
  python3 -m rooflinectl profile "$script" -o "$out/$name.profile.json" --top 8 "$flag" -- "$@" > "$out/$name.txt" 2>&1
  echo "-- $name ($flag): profile exit $?"
}
summarise() {  # name
  local name=$1
  grep -v '^USDT' "$out/$name.txt" | tail -14
  python3 - "$out/$name.profile.json" "$out/$name.nosource.profile.json" "$name" <<'PY' || rc=1
import json, sys
with_path, without_path, name = sys.argv[1:]
try:
    on, off = json.load(open(with_path)), json.load(open(without_path))
except (OSError, ValueError) as exc:
    print(f"CHECK FAILED {name}: profile missing ({exc})")
    sys.exit(1)
def rows(data):
    t = data["kernels"]
    return [dict(zip(t["columns"], r)) for r in t["rows"]]
table = rows(on)
total = sum(r["time_s"] for r in table) or float("nan")
located = sum(r["time_s"] for r in table if r.get("source"))
share = located / total
info = on["metadata"].get("source_lines", {})
print(f"FIGURE {name} source share: {share:.1%} of kernel time ({located * 1e3:.3f} of {total * 1e3:.3f} ms) "
      f"has a user source line; status {info.get('status')} {info.get('why', '')}; {len(info.get('locations', []))} locations")
for r in sorted(table, key=lambda r: -r["time_s"])[:5]:
    print(f"FIGURE {name} top: {r['time_s'] / total:6.1%} {r['kernel'][:40]:40} {r['source'] or '-'} in "
          f"{r['source_function'] or '-'} ({r['source_call'] or '-'})")
s_on, s_off = on["summary"], off["summary"]
def ms(v):
    return f"{v * 1e3:.3f} ms" if isinstance(v, (int, float)) else "n/a"
a, b = s_on.get("iteration_time_s"), s_off.get("iteration_time_s")
dist = f"{(a / b - 1):+.1%}" if a and b else "n/a"
print(f"FIGURE {name} profiled step: with source {ms(a)}, without {ms(b)}: distortion {dist}")
def kernel_per_it(s):
    t, n = s.get("total_kernel_time_s"), s.get("iterations") or 1
    return t / n if isinstance(t, (int, float)) else None
ka, kb = kernel_per_it(s_on), kernel_per_it(s_off)
print(f"FIGURE {name} kernel time per iteration: with source {ms(ka)}, without {ms(kb)}: distortion "
      + (f"{ka / kb - 1:+.2%}" if ka and kb else "n/a") + " (target: within 3%)")
print(f"FIGURE {name} host events per iteration: with source {(s_on.get('host_events') or 0) / (s_on.get('iterations') or 1):.0f}, "
      f"without {(s_off.get('host_events') or 0) / (s_off.get('iterations') or 1):.0f}")
ua, ub = s_on.get("unprofiled_step_time_s"), s_off.get("unprofiled_step_time_s")
print(f"FIGURE {name} un-profiled step: after a session with source {ms(ua)}, without {ms(ub)}"
      + (f" ({ua / ub - 1:+.1%})" if ua and ub else "")
      + f"; medians of {len(s_on.get('unprofiled_step_times_s') or [])} and {len(s_off.get('unprofiled_step_times_s') or [])} steps")
files = {r["source"].rsplit(":", 1)[0] for r in table if r.get("source")}
foreign = sorted(f for f in files if not f.startswith("examples/real/"))
ok = share > 0.5 and not foreign and (not (ua and ub) or abs(ua / ub - 1) <= 0.10)
print(f"CHECK {name}: " + ("ok" if ok else f"FAILED: share {share:.1%}, files not the user's {foreign[:3]}, "
                                           f"un-profiled {ms(ua)} vs {ms(ub)}"))
sys.exit(0 if ok else 1)
PY
  echo "== show --by line ($name)"
  python3 -m rooflinectl show "$out/$name.profile.json" --by line --top 6 2>&1 | grep -v '^USDT' | head -14
  echo "== advise --format github ($name)"
  python3 -m rooflinectl advise "$out/$name.profile.json" --format github > "$out/$name.github.txt" 2>&1
  echo "-- advise exit $?"
  head -8 "$out/$name.github.txt" | cut -c1-400
}
echo "== per torch call on this host (scripts/bench_source_lines.py)"
python3 scripts/bench_source_lines.py --repeats 15 2>&1 | grep -v USDT | sed 's/^/FIGURE bench /'
# --steps 20: 3 warm-up + 20 timed iterations, 5 profiled, so 17 un-profiled steps to compare
# (with the default 5 only 2 were timed: +-30% between two runs of one configuration, 2026-12-02 B1)
gpt2=(examples/real/gpt2_forward.py --layers 12 --batch 8 --seq 1024 --steps 20)
tiny=(examples/real/gpt2_forward.py --layers 12 --batch 1 --seq 128 --steps 20)
llama=(examples/real/llama_train.py --layers 4 --hidden 1024 --batch 4 --seq 512 --steps 20)
for name in gpt2 gpt2tiny llama; do
  case $name in gpt2) args=("${gpt2[@]}");; gpt2tiny) args=("${tiny[@]}");; llama) args=("${llama[@]}");; esac
  profile "$name" --source "${args[@]}"
  profile "$name.nosource" --no-source "${args[@]}"
  summarise "$name"
done
exit $rc
