"""Where do a kernel's writes go? Nsight Compute's DRAM write bytes against the bytes the SMs
wrote into L2, kernel by kernel, on one GPT-2 small forward (bf16, batch 4, sequence 512).

ncu flushes the caches before it replays a kernel, and a kernel's output that fits in L2 (60 MB
on an H200) may still be there when the kernel ends: its write-back to DRAM happens later, during
some other kernel, so `dram__bytes_write` can be far below what the kernel wrote. The bytes the
SMs sent to L2 (`lts__t_sectors_srcunit_tex_op_write`, 32-byte sectors) are written by the kernel
itself. This probe puts the two side by side (issue 12: the GPT-2 attention whose counters read
compute-bound while the model reads it memory-bound).

python3 scripts/l2_writes_probe.py OUT_DIR      (needs ncu, a GPU and transformers; about 2 minutes)
Writes OUT_DIR/l2_writes.csv (ncu's raw CSV) and OUT_DIR/l2_writes.md (per kernel name, summed).
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

METRICS = ["gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_bytes.sum",
           "lts__t_sectors_srcunit_tex_op_write.sum", "lts__t_sectors_srcunit_tex_op_read.sum"]
FORWARD = ("import sys, torch; sys.path.insert(0, 'scripts'); from counters_gpt2 import make_inputs, forward; "
           "m, i = make_inputs(); forward(m, i); torch.cuda.synchronize()")


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    ncu = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    command = [ncu, "--clock-control", "none", "--metrics", ",".join(METRICS), "--csv", "--print-units", "base",
               "--launch-count", "400", sys.executable, "-c", FORWARD]
    done = subprocess.run(command, capture_output=True, text=True, timeout=float(os.environ.get("PROBE_TIMEOUT_S", 300)))
    (out / "l2_writes.log").write_text(done.stderr[-20000:])
    text = done.stdout[done.stdout.find('"ID"'):] if '"ID"' in done.stdout else ""
    (out / "l2_writes.csv").write_text(text)
    if done.returncode != 0 or not text:
        print(f"ncu failed (exit {done.returncode}): see l2_writes.log")
        sys.exit(1)
    per: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    launches: dict[str, set[str]] = defaultdict(set)
    for row in csv.DictReader(io.StringIO(text)):
        name = row["Kernel Name"][:90]
        value = float(row["Metric Value"].replace(",", "")) if row["Metric Value"] not in ("", "n/a") else 0.0
        per[name][row["Metric Name"]] += value
        launches[name].add(row["ID"])
    lines = ["| kernel | launches | time | DRAM read | DRAM write | SM writes into L2 | DRAM write / SM writes |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    totals = defaultdict(float)
    for name, m in sorted(per.items(), key=lambda kv: -kv[1]["gpu__time_duration.sum"]):
        l2_write = 32.0 * m["lts__t_sectors_srcunit_tex_op_write.sum"]
        for key, value in (("time", m["gpu__time_duration.sum"]), ("read", m["dram__bytes_read.sum"]),
                           ("write", m["dram__bytes_write.sum"]), ("l2w", l2_write)):
            totals[key] += value
        ratio = f"{m['dram__bytes_write.sum'] / l2_write:.2f}" if l2_write else "-"
        lines.append(f"| `{name}` | {len(launches[name])} | {m['gpu__time_duration.sum'] / 1e3:.1f} us | "
                     f"{m['dram__bytes_read.sum'] / 1e6:.2f} MB | {m['dram__bytes_write.sum'] / 1e6:.2f} MB | "
                     f"{l2_write / 1e6:.2f} MB | {ratio} |")
    lines.append(f"| all | {sum(len(v) for v in launches.values())} | {totals['time'] / 1e3:.1f} us | "
                 f"{totals['read'] / 1e6:.2f} MB | {totals['write'] / 1e6:.2f} MB | {totals['l2w'] / 1e6:.2f} MB | "
                 f"{totals['write'] / totals['l2w']:.2f} |" if totals["l2w"] else "| all | | | | | | |")
    (out / "l2_writes.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[:25] + lines[-1:]))


if __name__ == "__main__":
    main()
