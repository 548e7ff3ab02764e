"""A stand-in for Nsight Compute's `ncu`, for CPU tests of the counters subprocess paths.

tests/conftest-style fixtures put a `ncu` wrapper that runs this file on PATH. FAKE_NCU_MODE picks
the behaviour: ok (run the child program when FAKE_NCU_RUN_CHILD=1, else only write its status
file, then print the recorded H200 CSV rows that ncu would have measured), warn (the same with a warning), stdout (results on stdout, not the log),
program-fails (the child's status says exit code 3), perm, unsupported, hang, crash, mismatch,
nohelp-kernel-id. The selection of rows
follows what ncu 2025.3.1 did on the H200 (2026-11-30), written here independently of
rooflinectl: `--kernel-id :::N` took the N'th invocation of each kernel name, whatever its grid
and block (its documentation describes a per-launch-configuration count).
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import re
import subprocess
import sys
import time

HELP_OPTIONS = ["--metrics", "--csv", "--page", "--log-file", "--profile-from-start", "--clock-control",
                "--cache-control", "--print-units", "--target-processes", "--kernel-id", "--kernel-name-base",
                "--launch-count", "--export", "--force-overwrite", "--query-metrics"]
VALUE_OPTIONS = {"--profile-from-start", "--clock-control", "--metrics", "--page", "--log-file", "--cache-control",
                 "--print-units", "--target-processes", "--rename-kernels", "--kernel-name-base", "--kernel-id",
                 "--launch-count", "--export"}


def options(argv: list[str]) -> tuple[dict[str, str], list[str]]:
    opts: dict[str, str] = {}
    i = 0
    while i < len(argv) and argv[i].startswith("--"):
        if argv[i] in VALUE_OPTIONS:
            opts[argv[i]] = argv[i + 1]
            i += 2
        else:
            opts[argv[i]] = ""
            i += 1
    return opts, argv[i:]


def recorded_rows() -> tuple[list[str], list[list[str]], list[str]]:
    with gzip.open(os.environ["FAKE_NCU_CSV"], "rt") as handle:
        text = handle.read()
    lines = [ln for ln in text.splitlines() if not ln.startswith("==")]
    start = next(i for i, ln in enumerate(lines) if ln.startswith('"ID",'))
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    return rows[0], rows[2:], rows[1]


def select(header: list[str], rows: list[list[str]], kernel_id: str | None, count: int | None) -> list[list[str]]:
    name = header.index("Kernel Name")
    wanted = re.compile(kernel_id.split(":")[-1]) if kernel_id else None
    seen: dict[str, int] = {}
    out = []
    for row in rows:
        key = row[name]
        seen[key] = seen.get(key, 0) + 1
        if wanted is None or wanted.fullmatch(str(seen[key])):
            out.append(row)
    return out[:count] if count is not None else out


def warm_rows(header: list[str], rows: list[list[str]], metrics: list[str]) -> list[list[str]]:
    """The rows as the warm run prints them: only the metrics asked for, DRAM bytes times
    FAKE_NCU_WARM_DRAM (default 1: as cold), the other metric columns blank."""
    scale = float(os.environ.get("FAKE_NCU_WARM_DRAM", "1"))
    out = []
    for row in rows:
        new = list(row)
        for i, column in enumerate(header):
            if column.startswith("dram__bytes_") and column in metrics:
                new[i] = f"{float(row[i].replace(',', '')) * scale:,.0f}"
            elif "__" in column and column not in metrics:
                new[i] = ""
        out.append(new)
    return out


def main() -> int:
    mode = os.environ.get("FAKE_NCU_MODE", "ok")
    argv = sys.argv[1:]
    if argv[:1] == ["--version"]:
        print("NVIDIA (R) Nsight Compute Command Line Profiler\nVersion 2099.1.0.0 (build 1) (fake)")
        return 0
    if argv[:1] == ["--help"]:
        shown = [o for o in HELP_OPTIONS if not (mode == "nohelp-kernel-id" and o == "--kernel-id")]
        print("usage: ncu [options] [program] [program-arguments]\n" + "\n".join(f"  {o} arg" for o in shown))
        return 0
    if argv[:1] == ["--query-metrics"]:
        print("Device NVIDIA H200 (GH100)\n" + "-" * 20)
        for metric in os.environ.get("FAKE_NCU_METRICS", "").split(","):
            print(f"{metric.split('.')[0]}    a metric")
        return 0
    opts, child = options(argv)
    if opts.get("--cache-control") == "none":  # the warm run may fail its own way
        mode = os.environ.get("FAKE_NCU_WARM_MODE", mode)
    with open(opts["--log-file"], "w") as log:
        return run(mode, argv, opts, child, log)


def run(mode: str, argv: list[str], opts: dict[str, str], child: list[str], log) -> int:
    if mode == "perm":
        log.write("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance "
                  "Counters on the target device 0.\n")
        return 1
    if mode == "unsupported":
        log.write("==ERROR== The selected GPU device is not supported by this version of Nsight Compute.\n")
        return 1
    if mode == "crash":
        print("==ERROR== something went wrong", file=sys.stderr)
        return 9
    warm = opts.get("--cache-control") == "none"  # the warm run: DRAM bytes only, caches as the program left them
    with open(os.environ["FAKE_NCU_ARGS"] + (".warm" if warm else ""), "w") as record:
        record.write("\n".join(argv))
    log.write("==PROF== Connected to process 1\n")
    if mode == "warn":  # a warning beside results must not fail the run
        log.write("==WARNING== Setting GPU clocks is not supported on this device; continuing.\n")
    log.flush()
    if os.environ.get("FAKE_NCU_RUN_CHILD") == "1":
        code = subprocess.call(child)
    else:  # the child's start costs a torch import: most tests only need its status file
        code = 3 if mode == "program-fails" else 0
        if code:
            print("about to fail", flush=True)
        status = child[child.index("--status") + 1]
        with open(status, "w") as handle:
            json.dump({"exit_code": code, "completed": code == 0}, handle)
    if mode == "hang":
        time.sleep(60)
    header, rows, units = recorded_rows()
    rows = rows[int(os.environ.get("FAKE_NCU_SKIP", "0")):]
    if mode == "mismatch":
        rows = rows[::-1]
    count = int(opts["--launch-count"]) if "--launch-count" in opts else None
    chosen = select(header, rows, opts.get("--kernel-id"), count)
    if warm:
        chosen = warm_rows(header, chosen, opts["--metrics"].split(","))
    passes = os.environ.get("FAKE_NCU_WARM_PASSES", "1") if warm else "2"
    name = header.index("Kernel Name")
    for i, row in enumerate(chosen):
        log.write(f'==PROF== Profiling "{row[name][:40]}" - {i}: 0%....50%....100% - {passes} pass'
                  f'{"" if passes == "1" else "es"}\n')
    log.write("==PROF== Disconnected from process 1\n")
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerow(header)
    writer.writerow(units)
    for i, row in enumerate(chosen):
        writer.writerow([str(i), *row[1:]])
    (sys.stdout if mode == "stdout" else log).write(out.getvalue())
    return code


if __name__ == "__main__":
    sys.exit(main())
