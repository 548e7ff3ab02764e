"""The L2 reuse sweep's figures (issue 29): per pattern and size, the share of the consumer's
re-read tensor that came from DRAM by ncu (caches as the program left them) and by the cache model
(analysis/reuse_distance.py) over the sweep's capture.

python scripts/l2_reuse_figures.py NCU.csv[.gz] SWEEP.capture.json[.gz] PROFILE.json[.gz]
    the files of piece 92 (scripts/gpu.d/92-l2-reuse.sh; committed under tests/data/h200_l2_sweep),
    and a profile made on the same GPU with measured roofs (its L2 size and roof: the model's).
"""

from __future__ import annotations

import gzip
import sys

import numpy as np
from l2_reuse_sweep import PATTERNS, SIZES_MIB, launches  # scripts/: the sweep's launch order

from rooflinectl.analysis.memory_levels import with_modelled_dram
from rooflinectl.attribution.join import attribute
from rooflinectl.attribution.tensor_accesses import launch_accesses
from rooflinectl.capture.ncu.csv_parse import csv_rows, parse_number
from rooflinectl.capture.run.session import load_capture
from rooflinectl.outputs.profile_file import load_profile


def shares(ncu_path: str, capture_path: str, profile_path: str) -> dict[tuple[str, int], tuple[float, float]]:
    """(pattern, MiB) -> (modelled, ncu) DRAM share of the consumer's re-read tensor."""
    capture = load_capture(capture_path)
    ceilings = load_profile(profile_path).ceilings
    frame = attribute(capture.trace, capture.device_kind, capture.metadata).launches.reset_index(drop=True)
    accesses = launch_accesses(capture.trace, frame, capture.device_kind)
    modelled = with_modelled_dram(frame, accesses, ceilings)["modelled_dram_bytes"].to_numpy()
    order = launches()
    kernels = [i for i, name in enumerate(frame["kernel"]) if not str(name).startswith("Mem")][-len(order):]
    opener = gzip.open if ncu_path.endswith(".gz") else open
    with opener(ncu_path, "rt") as fh:
        rows = sorted(csv_rows(fh.read()), key=lambda r: int(r["ID"]))[-len(order):]  # the second sweep
    out = {}
    for (pattern, mib, role), i, row in zip(order, kernels, rows):
        if role == "consumer":
            nbytes = mib * 2**20
            written = sum(accesses[i][1][1::2]) if accesses[i] else 0
            out[(pattern, mib)] = ((modelled[i] - written) / nbytes, parse_number(row["dram__bytes_read.sum"]) / nbytes)
    return out


def main(ncu_path: str, capture_path: str, profile_path: str) -> None:
    found = shares(ncu_path, capture_path, profile_path)
    print("MiB     " + "".join(f"{p:>18}" for p in PATTERNS) + "   (ncu / model: DRAM share of the re-read tensor)")
    for mib in SIZES_MIB:
        print(f"{mib:<8}" + "".join(f"{found[(p, mib)][1]:>11.2f} / {found[(p, mib)][0]:.2f}" for p in PATTERNS))
    errors = {p: float(np.mean([abs(m - n) for (q, _), (m, n) in found.items() if q == p])) for p in PATTERNS}
    print("FIGURE mean |model - ncu|: " + ", ".join(f"{p} {e:.3f}" for p, e in errors.items())
          + f"; all {float(np.mean([abs(m - n) for m, n in found.values()])):.3f}")


if __name__ == "__main__":
    main(*sys.argv[1:4])
