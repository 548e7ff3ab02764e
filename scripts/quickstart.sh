#!/usr/bin/env bash
# The README's first command: a virtual environment in .venv, rooflinectl installed into it,
# this machine's roofs measured, and an example profiled (its table printed).
#
#   bash scripts/quickstart.sh            # then: . .venv/bin/activate
#
# torch: a machine that already has torch (a CUDA build on a GPU machine) keeps it (the venv sees
# the system's packages); elsewhere the CPU build 2.13.0 is installed first, so that installing
# rooflinectl does not pull a multi-GB CUDA build onto a machine without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv --system-site-packages .venv
. .venv/bin/activate
python -c "import torch" 2>/dev/null || python -m pip install -q torch==2.13.0
python -m pip install -q -e ".[dev]"
rooflinectl ceilings --measure
rooflinectl profile examples/mlp.py -- --batch 64
