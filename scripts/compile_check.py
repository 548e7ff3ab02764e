"""torch.compile under rooflinectl on the GPU: outputs, cost coverage, owners, distortion.

python3 scripts/compile_check.py OUT_DIR NAME MODE [--repeats N] [--plain-runs M] -- SCRIPT [ARGS...]

Runs SCRIPT with --compile MODE: plain, then N pairs (default 1) of `rooflinectl profile` and a
bare torch.profiler (scripts/record_trace.py), alternating; all with Inductor's cost annotations
on, so they share Inductor's compile cache and compile the same kernels (the annotations change
no math).
Prints one COMPILE line (JSON) and appends a row to OUT_DIR/compile.md:
- digest_equal: the script's OUTPUT line is the same plain and profiled; with --plain-runs M > 1
  the plain run is repeated (a fresh Inductor cache each time) and plain_stable says whether the
  plain runs agree among themselves: max-autotune picks kernels by timing them in each run, so a
  plain run may differ from another plain run, and then a profiled run that differs says nothing
  about the profiler;
- known_cost_share: GPU time with a known cost; owner_share: known cost and a named owner
  (a module, or the aten ops a generated kernel fused / the op that launched the kernel);
- distortion: median counted GPU kernel time under rooflinectl / the median of the same count
  on the bare traces - 1, copies and memsets left out: the weight upload is a pageable host copy
  whose time follows the host (18-25 ms from run to run for GPT-2 on the H200, 2026-11-30), not
  the profiler (the bare trace goes through the same attribution, so both count the same
  launches; the profile counts the whole run, `--iterations none`, as the bare trace's
  attribution does); spread: (max - min) / median of the bare runs' counts, the noise the
  distortion is read against.
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

COPY = re.compile(r"^(Memcpy|Memset)")


def _kernel_time_s(table) -> float:
    """GPU kernel time of a kernel/launch table, copies and memsets left out."""
    return float(table.loc[~table["kernel"].fillna("").str.match(COPY), "time_s"].sum())


ENV = {**os.environ, "TORCHINDUCTOR_BENCHMARK_KERNEL": "1", "TORCHINDUCTOR_CPP_ENABLE_KERNEL_PROFILE": "1"}


def _run(cmd: list[str], env: dict[str, str] | None = None) -> str:
    done = subprocess.run(cmd, capture_output=True, text=True, env=env or ENV, check=False)
    if done.returncode != 0:
        print(done.stdout[-3000:], done.stderr[-3000:], file=sys.stderr)
        raise SystemExit(f"failed ({done.returncode}): {' '.join(cmd)}")
    return done.stdout


def _digest(out: str) -> str | None:
    return next((line for line in out.splitlines() if line.startswith("OUTPUT ")), None)


def main() -> int:
    out_dir, name, mode = sys.argv[1:4]
    options = sys.argv[4:sys.argv.index("--")]
    repeats = int(options[options.index("--repeats") + 1]) if "--repeats" in options else 1
    script = sys.argv[sys.argv.index("--") + 1:] + ["--compile", mode]
    prefix = os.path.join(out_dir, f"{name}-{mode}")
    plain_runs = int(options[options.index("--plain-runs") + 1]) if "--plain-runs" in options else 1
    plain_digests = []
    for i in range(plain_runs):
        env = dict(ENV, TORCHINDUCTOR_CACHE_DIR=tempfile.mkdtemp(prefix=f"inductor-{name}-{mode}-")) if i else None
        plain_digests.append(_digest(_run([sys.executable, *script], env)))
    plain = plain_digests[0]

    from rooflinectl.attribution.join import attribute
    from rooflinectl.capture.read.trace import from_chrome_trace
    from rooflinectl.outputs.profile_file import load_profile

    profiled, profile, ours_s, bare_s = None, None, [], []
    for i in range(repeats):
        tag = "" if i == 0 else f".{i}"
        out = _digest(_run([sys.executable, "-m", "rooflinectl", "profile", script[0], "-o",
                            f"{prefix}{tag}.profile.json", "-q", "--iterations", "none",
                            *(["--save-capture", f"{prefix}.capture.json.gz"] if i == 0 else []), "--", *script[1:]]))
        profiled = profiled if i else out
        run_profile = load_profile(f"{prefix}{tag}.profile.json")
        profile = profile if i else run_profile  # the first run's: the one whose costs are reported
        ours_s.append(_kernel_time_s(run_profile.kernels))
        _run([sys.executable, "scripts/record_trace.py", f"{prefix}.bare.trace.json.gz", "--inductor-costs", "--",
              *script])
        with gzip.open(f"{prefix}.bare.trace.json.gz", "rt") as handle:
            bare = attribute(from_chrome_trace(json.load(handle)), "cuda", dict(run_profile.metadata)).launches
        bare_s.append(_kernel_time_s(bare))

    kernels = profile.kernels
    total = float(kernels["time_s"].sum())
    known = kernels["cost_source"] != "none"
    owned = known & ((kernels["module"].fillna("") != "") | (kernels["op"].fillna("") != ""))
    with_module = known & (kernels["module"].fillna("") != "")
    record = {
        "name": name, "mode": mode, "digest_equal": plain is not None and plain == profiled,
        "plain_output": plain, "profiled_output": profiled, "plain_outputs": plain_digests,
        "plain_stable": len(set(plain_digests)) == 1 if plain_runs > 1 else None,
        "known_cost_share": float(kernels.loc[known, "time_s"].sum() / total) if total else None,
        "owner_share": float(kernels.loc[owned, "time_s"].sum() / total) if total else None,
        "module_share": float(kernels.loc[with_module, "time_s"].sum() / total) if total else None,
        "inductor_share": float(kernels.loc[kernels["cost_source"] == "inductor", "time_s"].sum() / total) if total else None,
        "kernel_time_s": statistics.median(ours_s), "bare_kernel_time_s": statistics.median(bare_s),
        "kernel_times_s": ours_s, "bare_kernel_times_s": bare_s, "repeats": repeats,
        "compile_work_s": profile.summary.get("compile_work_s"),
    }
    bare_median = record["bare_kernel_time_s"]
    record["distortion"] = record["kernel_time_s"] / bare_median - 1 if bare_median else None
    record["bare_spread"] = (max(bare_s) - min(bare_s)) / bare_median if bare_median and repeats > 1 else None
    print("COMPILE " + json.dumps(record), flush=True)
    device = profile.metadata.get("device_name", "?")
    with open(os.path.join(out_dir, "compile.md"), "a", encoding="utf-8") as handle:
        handle.write(f"| {dt.date.today()} | {device} | {name} | {mode} | {record['digest_equal']} | "
                     f"{record['known_cost_share']:.1%} | {record['owner_share']:.1%} | {record['module_share']:.1%} | "
                     f"{record['inductor_share']:.1%} | {record['distortion']:+.2%} | {repeats} | "
                     f"{'-' if record['bare_spread'] is None else format(record['bare_spread'], '.2%')} |\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
