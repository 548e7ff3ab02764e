#!/usr/bin/env bash
# Variants and launch configs of the two reference kernels that miss their issue-13 targets (the
# int8 GEMV's int8 -> fp32 conversion, the copy's block size, warps, cache hints, persistent grid):
# one JSON line per variant into $PIECE_OUT/sweep.jsonl, then the best of each. About 4-5 min.
set -u -o pipefail
out="${PIECE_OUT:?PIECE_OUT must be set}"
# the reference kernels are the installed package rooflinectl_kernels (pyproject package-dir), not found
# through PYTHONPATH alone: install this checkout unless it is the one installed (a bare run of the piece)
python3 -c "import os, sys, rooflinectl_kernels as k; sys.exit(os.path.dirname(os.path.realpath(k.__file__)) != os.path.realpath('kernels'))" \
  2>/dev/null || python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
python3 scripts/kernel_sweep.py ${SWEEP_ONLY:+--only "$SWEEP_ONLY"} > "$out/sweep.jsonl"
rc=$?
python3 - "$out/sweep.jsonl" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
for kernel in ("gemv", "copy"):
    for variant in sorted({r.get("variant") for r in rows if r.get("kernel") == kernel and "us" in r}):
        best = sorted((r for r in rows if r.get("kernel") == kernel and r.get("variant") == variant and "us" in r),
                      key=lambda r: r["us"])[:3]
        for r in best:
            print(kernel, variant, r["us"], "us", r["tb_s"], "TB/s", "ok" if r["ok"] else "WRONG", r["config"])
PY
exit $rc
