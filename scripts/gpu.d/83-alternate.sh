#!/usr/bin/env bash
# Issue 28: the default `rooflinectl profile` against plain runs of the same script, alternated
# round by round (scripts/investigations/alternate_plain_profiled.py): the un-profiled step against
# plain processes, with an interval, the plain processes' own spread (the floor one pair cannot
# beat), and the claimed launch saving against plain step - kernel busy. Default: the Llama-style
# training step (4 layers, hidden 1024, batch 4 x 512, 3 warm-up + 30 timed steps), rounds until
# ALTERNATE_BUDGET_S (default 150 s; a Llama process takes about 10-15 s on the H200).
# ALTERNATE_ONLY="llama-train mixtral-forward" picks the workloads (bench_steady_default's names).
set -u -o pipefail
out="${PIECE_OUT:?PIECE_OUT must be set}"
# shellcheck disable=SC2086
python3 scripts/investigations/alternate_plain_profiled.py "$out" --device cuda --rounds "${ALTERNATE_ROUNDS:-8}" \
  --budget-s "${ALTERNATE_BUDGET_S:-150}" --only ${ALTERNATE_ONLY:-llama-train}
