#!/usr/bin/env bash
# The analytic cost model against Nsight Compute counters, kernel by kernel.
set -u
command -v ncu >/dev/null || export PATH="$PATH:/usr/local/cuda/bin"
python3 scripts/ncu_check.py "$PIECE_OUT"
