#!/usr/bin/env bash
# An 80-column transcript (issue 35): `rooflinectl profile`, `show`, `advise`, and `diff` of two
# profiles of the same script, on GPT-2 small (examples/real/gpt2_forward.py: 12 layers, batch 8 x
# 1024, bf16, 3 warm-up + 20 timed forwards), each with COLUMNS=80 and its output piped.
# scripts/transcript.py writes $PIECE_OUT/transcript.md (what docs/transcript.md holds) and prints
# CHECK lines: each command's exit code, and rooflinectl's lines within 80 columns, none ending in a
# space. Expected runtime: about 60-90 s on an H200 (two profiles of the script).
set -u -o pipefail
out="${PIECE_OUT:?PIECE_OUT must be set}"
python3 scripts/transcript.py "$out" --device cuda ${TRANSCRIPT_ARGS:-}
