#!/usr/bin/env bash
# Issue 12: a kernel's DRAM write bytes (ncu) against the bytes its SMs wrote into L2, on one
# GPT-2 small forward (scripts/l2_writes_probe.py). About 2 minutes; needs ncu and transformers.
set -u
command -v ncu >/dev/null || export PATH="$PATH:/usr/local/cuda/bin"
python3 scripts/l2_writes_probe.py "$PIECE_OUT"
