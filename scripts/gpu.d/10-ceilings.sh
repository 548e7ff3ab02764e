#!/usr/bin/env bash
# Measured ceilings on the GPU machine: JSON and the table, into $PIECE_OUT.
# Runs the click command directly so it does not depend on the other subcommands importing.
set -u -o pipefail
out="${PIECE_OUT:-${OUT_DIR:-.}/10-ceilings}"
mkdir -p "$out"
export ROOFLINECTL_CACHE_DIR="${ROOFLINECTL_CACHE_DIR:-$out/cache}"
ceilings() { python3 -c 'import sys; from rooflinectl.cli.ceilings_cmd import command; command(sys.argv[1:])' "$@"; }
start=$(date +%s.%N)
ceilings --measure --refresh --format json > "$out/ceilings.json"
rc=$?
end=$(date +%s.%N)
echo "ceilings --measure --refresh: exit $rc, $(python3 -c "print(f'{$end - $start:.1f}')") s wall (imports included)" | tee "$out/timing.txt"
ceilings --measure > "$out/ceilings.txt"   # the cached measurement, as the table
cat "$out/ceilings.txt"
python3 scripts/bench_ceilings.py "$out/ceilings.json" | tee "$out/targets.md"
exit $rc
