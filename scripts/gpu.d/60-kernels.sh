#!/usr/bin/env bash
# Reference kernels on the GPU: `rooflinectl kernels --size large` checks, times and places every
# reference kernel (kernels/) on the roofline beside its library equivalent; writes into $PIECE_OUT:
#   kernels.json (every figure), kernels.profile.json (for show/plot/advise), kernels-roofline.png,
#   kernels.md (rows for docs/benchmarks/kernels.md, via scripts/kernels_report.py),
#   kernels-table.txt (`show`), kernels-advice.md (`advise`).
# Expected runtime on an H200: about 90 s (Triton compiles and autotuning included; about 20 s more
# when no measured ceilings are cached yet, for `ceilings --measure`). Reference kernels: KERNELS_ONLY="copy,matmul".
set -u -o pipefail
out="${PIECE_OUT:?PIECE_OUT must be set}"
rl() { python3 -m rooflinectl "$@"; }
# the reference kernels are the installed package rooflinectl_kernels (pyproject package-dir), not found
# through PYTHONPATH alone: install this checkout unless it is the one installed (a bare run of the piece)
python3 -c "import os, sys, rooflinectl_kernels as k; sys.exit(os.path.dirname(os.path.realpath(k.__file__)) != os.path.realpath('kernels'))" \
  2>/dev/null || python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
only=()
[ -n "${KERNELS_ONLY:-}" ] && only=(--only "$KERNELS_ONLY")
# Targets are percentages of measured roofs: measure once (instant when 10-ceilings has cached them).
rl ceilings --measure --format json > "$out/ceilings.json" || echo "ceilings --measure: exit $?"
start=$(date +%s)
rl kernels --size large --format json ${only[@]+"${only[@]}"} -o "$out/kernels.profile.json" \
  --plot "$out/kernels-roofline.png" > "$out/kernels.json"
rc=$?
echo "kernels --size large: exit $rc in $(( $(date +%s) - start )) s"
python3 scripts/kernels_report.py "$out/kernels.json" | tee "$out/kernels.md"
rl show "$out/kernels.profile.json" --top 50 > "$out/kernels-table.txt" || echo "show: exit $?"
rl advise "$out/kernels.profile.json" --format markdown > "$out/kernels-advice.md" || echo "advise: exit $?"
ls -la "$out"
exit $rc
