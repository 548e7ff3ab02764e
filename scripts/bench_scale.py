"""Scale benchmark: capture and analysis of long runs, and the CLI's start-up time.

python scripts/bench_scale.py capture OUT_DIR --launches 200000 [1000000 ...]
    `rooflinectl profile scripts/scale_workload.py -- N` against the same script under a bare
    torch.profiler that exports its trace (scripts/scale_workload.py --bare-profile): wall
    seconds and peak RSS of each whole process (os.wait4), and their ratios.
python scripts/bench_scale.py synth TRACE.json --launches 1000000
    a CUDA-style Chrome trace of N launches: the single-kernel ops of a real H200 trace
    (tests/data/h200_real/gpt2_fwd_eager.trace.json.gz), each event as recorded, replayed
    one after the other with new ids and times until there are N kernels.
python scripts/bench_scale.py to-capture TRACE.json OUT.capture.json.gz
    the same events saved as a capture file (what `profile --save-capture` writes).
python scripts/bench_scale.py analyse OUT_DIR TRACE.json|OUT.capture.json.gz
    load, attribute, analyse, advise and plot a saved trace in a child process: seconds (wall
    and CPU) of each step and the child's peak RSS; then as a user runs it, three commands
    (`rooflinectl analyse TRACE`, `advise`, `plot`): each one's wall time and peak RSS.
python scripts/bench_scale.py startup OUT_DIR
    `rooflinectl --help`, `--version` and a Tab completion: wall seconds (best of 5).

Each command writes OUT_DIR/<command>.json and prints a markdown table with the device and the
date, for docs/benchmarks/scale.md. Figures are measured, never assumed: a run that fails says so.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
WORKLOAD = ROOT / "scripts" / "scale_workload.py"
SOURCE_TRACE = ROOT / "tests" / "data" / "h200_real" / "gpt2_fwd_eager.trace.json.gz"


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    info: dict[str, Any] = {"date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d"),
                            "host_cpus": os.cpu_count(), "python": platform.python_version()}
    try:
        import torch

        info["torch"] = torch.__version__
        info["device"] = torch.cuda.get_device_name() if torch.cuda.is_available() else platform.processor() or "cpu"
    except ImportError:
        info["device"] = "cpu"
    try:
        import orjson

        info["json_decoder"] = f"orjson {orjson.__version__}"
    except ImportError:
        info["json_decoder"] = "json (standard library)"
    try:
        import msgspec

        info["json_decoder"] = f"msgspec {msgspec.__version__} (typed events), {info['json_decoder']}"
    except ImportError:
        pass
    return info


def run_child(cmd: list[str], timeout_s: float, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run cmd; its wall seconds, peak RSS (bytes, the largest of the process and the children it
    waited for), exit code and the SCALE/BENCH JSON lines it printed."""
    started_at = time.time()  # a child may report wall-clock times: its start-up and exit follow
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
        killer = threading.Timer(timeout_s, proc.kill)  # wait4 blocks: a poll loop would round the time
        killer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            killer.cancel()
        wall_s = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode("utf-8", "replace")
    result: dict[str, Any] = {"cmd": " ".join(cmd[1:]) if cmd[0] == sys.executable else " ".join(cmd),
                              "wall_s": round(wall_s, 3), "cpu_s": round(usage.ru_utime + usage.ru_stime, 3),
                              "peak_rss_bytes": usage.ru_maxrss * 1024,
                              "exit_code": proc.returncode, "timed_out": wall_s > timeout_s,
                              "started_at": started_at}
    for line in text.splitlines():
        for tag in ("SCALE ", "BENCH "):
            if line.startswith(tag):
                result.setdefault("reported", {}).update(json.loads(line[len(tag):]))
    if proc.returncode != 0:
        result["output_tail"] = text[-2000:]
    return result


def rooflinectl_cmd() -> list[str]:
    found = shutil.which("rooflinectl")
    return [found] if found else [sys.executable, "-m", "rooflinectl"]


def _phase_name(phase: str) -> str:
    """"attributing 101,009 events" -> "attributing": the words before a count, size or path."""
    words = []
    for word in phase.split():
        if any(c.isdigit() or c in "/(" for c in word):
            break
        words.append(word)
    return " ".join(words) or phase


def phase_times(log: Path, wall_s: float) -> list[dict[str, Any]]:
    """Each phase of the phase log with its seconds (to the next phase; the last one, "exit", to the
    end of the process as the parent timed it) and the resident memory when it began."""
    try:
        marks = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    except (OSError, ValueError):
        return []
    marks = [{"t_s": 0.0, "rss_bytes": None, "phase": "start-up"}, *marks]
    marks[-1] = {**marks[-1], "phase": "exit"}  # "done": the profile is written; what follows is the exit
    ends = [m["t_s"] for m in marks[1:]] + [wall_s]
    return [{"phase": _phase_name(m["phase"]), "s": round(end - m["t_s"], 3), "rss_bytes": m["rss_bytes"]}
            for m, end in zip(marks, ends)]


def cmd_capture(out_dir: Path, launches: list[int], timeout_s: float) -> dict[str, Any]:
    rows = []
    for n in launches:
        with tempfile.TemporaryDirectory(dir=out_dir) as tmp:
            bare = run_child([sys.executable, str(WORKLOAD), str(n), "--bare-profile", f"{tmp}/bare.json"], timeout_s)
            trace_bytes = os.path.getsize(f"{tmp}/bare.json") if os.path.exists(f"{tmp}/bare.json") else None
            phase_log = Path(tmp) / "phases.jsonl"  # where rooflinectl's time and memory went (cli/status.py)
            tool = run_child([*rooflinectl_cmd(), "profile", str(WORKLOAD), "-q", "-o", f"{tmp}/p.profile.json",
                              "--", str(n)], timeout_s, env={**os.environ, "ROOFLINECTL_PHASE_LOG": str(phase_log)})
            tool["phases"] = phase_times(phase_log, tool["wall_s"])
            kernels = None
            if os.path.exists(f"{tmp}/p.profile.json"):
                summary = json.loads(Path(f"{tmp}/p.profile.json").read_text())["summary"]
                kernels = summary.get("launches")
        row = {"launches": n, "bare": bare, "rooflinectl": tool, "bare_trace_bytes": trace_bytes,
               "launches_counted": kernels}
        if bare["exit_code"] == 0 and tool["exit_code"] == 0:
            row["wall_ratio"] = round(tool["wall_s"] / bare["wall_s"], 3)
            row["rss_ratio"] = round(tool["peak_rss_bytes"] / bare["peak_rss_bytes"], 3)
        rows.append(row)
        print(json.dumps(row), flush=True)
    return {"machine": machine(), "capture": rows}


def _shown(path: Path) -> str:
    """A path as the report shows it: relative to the repository when inside it."""
    resolved = path.resolve()
    return str(resolved.relative_to(ROOT)) if resolved.is_relative_to(ROOT) else str(resolved)


def cmd_synth(path: Path, launches: int, source: Path) -> dict[str, Any]:
    """Replay the single-kernel ops of a real trace until there are `launches` kernels."""
    with gzip.open(source, "rt") as handle:
        doc = json.load(handle)
    events = doc["traceEvents"]
    ops: dict[int, list[dict[str, Any]]] = {}
    runtime: dict[int, dict[str, Any]] = {}
    kernels: dict[int, list[dict[str, Any]]] = {}
    for e in events:
        args = e.get("args") or {}
        if e.get("ph") != "X":
            continue
        if e.get("cat") == "cpu_op":
            ops.setdefault(args.get("External id", -1), []).append(e)
        elif e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in args:
            runtime[args["correlation"]] = e
        elif e.get("cat") == "kernel":
            kernels.setdefault(args.get("External id", -1), []).append(e)
    templates = []
    for ext, ks in kernels.items():
        if len(ks) == 1 and len(ops.get(ext, [])) == 1 and ks[0]["args"]["correlation"] in runtime:
            templates.append((ops[ext][0], runtime[ks[0]["args"]["correlation"]], ks[0]))
    templates.sort(key=lambda t: t[2]["ts"])
    if not templates:
        raise SystemExit(f"{source}: no single-kernel ops to replay")
    header = {k: v for k, v in doc.items() if k not in ("traceEvents", "traceName")}
    meta = [e for e in events if e.get("ph") == "M"]
    t0 = min(float(e["ts"]) for e in events if e.get("ph") == "X")
    host_us, device_us = t0, t0
    written = 0
    with open(path, "w", encoding="utf-8") as out:
        out.write(json.dumps(header, indent=2)[:-2] + ',\n  "traceEvents": [\n')
        out.write(",\n".join(json.dumps(m, indent=2) for m in meta))
        for i in range(launches):
            op, call, kernel = templates[i % len(templates)]
            ext, corr = 1 + i, 1 + i
            host_us += 2.0
            op_e = {**op, "ts": round(host_us, 3), "args": {**op["args"], "External id": ext}}
            call_at = host_us + min(float(call["ts"]) - float(op["ts"]), float(op.get("dur", 0)))
            call_e = {**call, "ts": round(call_at, 3), "args": {**call["args"], "External id": ext, "correlation": corr}}
            op_e["dur"] = round(max(float(op.get("dur", 0)), call_at + float(call.get("dur", 0)) - host_us), 3)
            host_us += float(op_e["dur"])
            device_us = max(device_us, call_at + 5.0) + 1.0
            kernel_e = {**kernel, "ts": round(device_us, 3),
                        "args": {**kernel["args"], "External id": ext, "correlation": corr}}
            device_us += float(kernel.get("dur", 0))
            flows = [{"ph": "s", "id": corr, "pid": call["pid"], "tid": call["tid"], "ts": call_e["ts"], "cat": "ac2g", "name": "ac2g"},
                     {"ph": "f", "id": corr, "pid": kernel["pid"], "tid": kernel["tid"], "ts": kernel_e["ts"], "cat": "ac2g",
                      "name": "ac2g", "bp": "e"}]
            out.write(",\n" + ",\n".join(json.dumps(e, indent=2) for e in (op_e, call_e, kernel_e, *flows)))
            written += 1
        out.write('\n  ],\n  "traceName": "synthetic"\n}\n')
    return {"path": str(path), "launches": written, "templates": len(templates), "source": _shown(source),
            "bytes": os.path.getsize(path)}


def analyse_child(trace_path: str, plot_path: str) -> None:
    """In the child: each step timed (wall and this process's CPU seconds); one BENCH line.

    A `.capture.json.gz` is read with load_capture (the file `profile --save-capture` writes),
    anything else as torch.profiler's Chrome trace (what `profile` reads after the export)."""
    times: dict[str, float] = {}
    clock = [time.perf_counter(), time.process_time()]

    def lap(name: str) -> None:
        now = [time.perf_counter(), time.process_time()]
        times[f"{name}_s"], times[f"{name}_cpu_s"] = now[0] - clock[0], now[1] - clock[1]
        clock[:] = now

    start = clock[:]
    from rooflinectl.analysis.advice.engine import advise
    from rooflinectl.capture.read.trace import read_chrome_trace
    from rooflinectl.capture.run.session import load_capture
    from rooflinectl.ceilings.model import Ceilings, Roof
    from rooflinectl.outputs.plot import plot_profile, save_figure
    from rooflinectl.pipeline import analyse_trace
    from rooflinectl.profile_model import ProfileData

    lap("import")
    h200 = Ceilings(device_name="NVIDIA H200", device_kind="cuda",  # the spec sheet's roofs (no GPU here)
                    memory_bytes_per_s={"dram": Roof(4.8e12, "spec")},
                    compute_flops_per_s={"tensor.bf16": Roof(989e12, "spec"), "simt.fp32": Roof(67e12, "spec"),
                                         "simt.bf16": Roof(134e12, "spec")},
                    kernel_floor_s=Roof(2e-6, "estimate"))
    trace = (load_capture(trace_path).trace if trace_path.endswith(".capture.json.gz")
             else read_chrome_trace(trace_path))
    lap("load")
    metadata = {"device_kind": "cuda"}
    table, summary = analyse_trace(trace, "cuda", metadata, h200)[:2]  # (table, summary[, setup table])
    lap("attribute_analyse")
    data = ProfileData(kernels=table, ceilings=h200, metadata=metadata, summary=summary)
    report = advise(data)
    lap("advise")
    save_figure(plot_profile(data), plot_path)
    lap("plot")
    times["total_s"] = time.perf_counter() - start[0]
    times["total_cpu_s"] = time.process_time() - start[1]
    print("BENCH " + json.dumps({**{k: round(v, 3) for k, v in times.items()}, "kernels": len(trace.kernels),
                                 "ops": len(trace.ops), "rows": len(table), "findings": len(report.findings)}), flush=True)


def cmd_to_capture(trace: Path, out: Path) -> dict[str, Any]:
    """A Chrome trace saved as a capture file (what `profile --save-capture` writes)."""
    from rooflinectl.capture.read.trace import read_chrome_trace
    from rooflinectl.capture.run.session import Capture, save_capture

    save_capture(Capture("cuda", read_chrome_trace(trace), {"source": str(trace)}), str(out))
    return {"path": str(out), "bytes": out.stat().st_size}


def cmd_analyse(out_dir: Path, trace: Path, timeout_s: float) -> dict[str, Any]:
    result = run_child([sys.executable, __file__, "analyse-child", str(trace), str(out_dir / "scale-roofline.png")],
                       timeout_s)
    profile = out_dir / "scale.profile.json"
    profile.unlink(missing_ok=True)
    base = rooflinectl_cmd()
    commands = {"analyse": base + ["analyse", str(trace), "-o", str(profile), "-q"],
                "advise": base + ["advise", str(profile)],
                "plot": base + ["plot", str(profile), "-o", str(out_dir / "scale-roofline-cli.png")]}
    chain = {name: run_child(cmd, timeout_s) for name, cmd in commands.items()}
    return {"machine": machine(), "analyse": {**result, "trace": str(trace), "trace_bytes": trace.stat().st_size},
            "commands": chain}


def cmd_startup(out_dir: Path) -> dict[str, Any]:
    base = rooflinectl_cmd()
    env = {**os.environ, "_ROOFLINECTL_COMPLETE": "bash_complete", "COMP_WORDS": "rooflinectl pro", "COMP_CWORD": "1"}
    cases = {"--help": (base + ["--help"], None), "--version": (base + ["--version"], None),
             "completion": (base, env), "profile --help": (base + ["profile", "--help"], None)}
    rows = {}
    for name, (cmd, case_env) in cases.items():
        runs = [run_child(cmd, 60, case_env) for _ in range(5)]
        best = min(runs, key=lambda r: r["wall_s"])
        rows[name] = {"best_wall_s": best["wall_s"], "median_wall_s": sorted(r["wall_s"] for r in runs)[2],
                      "exit_code": best["exit_code"]}
    return {"machine": machine(), "startup": rows}


def markdown(result: dict[str, Any]) -> str:
    m = result["machine"]
    lines = [f"Measured {m['date']} on {m['device']} ({m['host_cpus']} CPUs), Python {m['python']}, "
             f"torch {m.get('torch', '?')}, trace decoder {m['json_decoder']}.", ""]
    gb = 1e9
    if "capture" in result:
        lines += ["| launches | bare profiler: run + stop + export (whole process) | peak RSS | rooflinectl profile | peak RSS | wall ratio | trace |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        for r in result["capture"]:
            b, t = r["bare"], r["rooflinectl"]
            phases = b.get("reported", {})
            split = f" (run {phases['run_s']:.1f} s, stop {phases['stop_s']:.1f} s, export {phases['export_s']:.1f} s)" if "stop_s" in phases else ""
            failed = "" if t["exit_code"] == 0 else f" (exit {t['exit_code']}{', timed out' if t['timed_out'] else ''})"
            lines.append(f"| {r['launches']:,} | {b['wall_s']:.1f} s{split}, {b['cpu_s']:.1f} s CPU | "
                         f"{b['peak_rss_bytes'] / gb:.2f} GB | {t['wall_s']:.1f} s{failed}, {t['cpu_s']:.1f} s CPU | "
                         f"{t['peak_rss_bytes'] / gb:.2f} GB | {r.get('wall_ratio', 'n/a')} | "
                         f"{(r['bare_trace_bytes'] or 0) / 1e6:.0f} MB |")
        for r in result["capture"]:
            bare = r["bare"].get("reported", {})
            if bare.get("end_at") is not None and bare.get("imported_at") is not None:
                started_at = r["bare"]["started_at"]
                exit_s = r["bare"]["wall_s"] - (bare["end_at"] - started_at)
                lines.append(f"\nbare profiler at {r['launches']:,} launches, seconds per phase: start-up (python, "
                             f"imports) {bare['imported_at'] - started_at:.1f} s; device {bare['device_init_s']:.1f} s; profiler "
                             f"start {bare['profiler_start_s']:.1f} s; run {bare['run_s']:.1f} s; stop "
                             f"{bare['stop_s']:.1f} s; export {bare['export_s']:.1f} s; exit {exit_s:.1f} s")
            if r["rooflinectl"].get("phases"):
                lines.append(f"\nrooflinectl at {r['launches']:,} launches, seconds per phase (resident memory as it began): "
                             + "; ".join(f"{p['phase']} {p['s']:.1f} s" + (f" ({p['rss_bytes'] / gb:.2f} GB)" if p["rss_bytes"] else "")
                                         for p in r["rooflinectl"]["phases"]))
    if "analyse" in result:
        a = result["analyse"]
        r = a.get("reported", {})

        def step(name: str) -> str:
            return f"{r.get(name + '_s', float('nan')):.1f} s ({r.get(name + '_cpu_s', float('nan')):.1f} s CPU)"

        kind = "capture file" if str(a["trace"]).endswith(".capture.json.gz") else "Chrome trace"
        lines += ["| saved trace | kernels | load | attribute + analyse | advise | plot | total, with imports | peak RSS |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- |",
                  f"| {kind}, {a['trace_bytes'] / 1e6:,.0f} MB | {r.get('kernels', 0):,} | {step('load')} | "
                  f"{step('attribute_analyse')} | {step('advise')} | {step('plot')} | {step('total')} | "
                  f"{a['peak_rss_bytes'] / gb:.2f} GB |"]
        if a["exit_code"]:
            lines.append(f"\nThe analysis failed (exit {a['exit_code']}): {a.get('output_tail', '')[-300:]}")
    if "commands" in result:
        chain = result["commands"]
        lines += ["", "| as three commands | " + " | ".join(f"`rooflinectl {n}`" for n in chain) + " | in all |",
                  "| --- |" + " --- |" * (len(chain) + 1),
                  "| wall (peak RSS) | " + " | ".join(
                      f"{c['wall_s']:.2f} s ({c['peak_rss_bytes'] / gb:.2f} GB)" + (f", exit {c['exit_code']}" if c["exit_code"] else "")
                      for c in chain.values()) + f" | {sum(c['wall_s'] for c in chain.values()):.2f} s |"]
    if "startup" in result:
        lines += ["| command | best of 5 | median |", "| --- | --- | --- |"]
        lines += [f"| `rooflinectl {k}` | {v['best_wall_s']:.2f} s | {v['median_wall_s']:.2f} s |"
                  for k, v in result["startup"].items()]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("capture")
    p.add_argument("out_dir", type=Path)
    p.add_argument("--launches", type=int, nargs="+", default=[200_000])
    p.add_argument("--timeout-s", type=float, default=600)
    p = sub.add_parser("synth")
    p.add_argument("trace", type=Path)
    p.add_argument("--launches", type=int, default=1_000_000)
    p.add_argument("--source", type=Path, default=SOURCE_TRACE)
    p = sub.add_parser("analyse")
    p.add_argument("out_dir", type=Path)
    p.add_argument("trace", type=Path)
    p.add_argument("--timeout-s", type=float, default=600)
    p = sub.add_parser("to-capture")
    p.add_argument("trace", type=Path)
    p.add_argument("capture", type=Path)
    p = sub.add_parser("analyse-child")
    p.add_argument("trace")
    p.add_argument("plot")
    p = sub.add_parser("startup")
    p.add_argument("out_dir", type=Path)
    args = parser.parse_args()
    if args.command == "analyse-child":
        analyse_child(args.trace, args.plot)
        return
    if args.command == "to-capture":
        print(json.dumps(cmd_to_capture(args.trace, args.capture)))
        return
    if args.command == "synth":
        print(json.dumps(cmd_synth(args.trace, args.launches, args.source)))
        return
    args.out_dir.mkdir(parents=True, exist_ok=True)
    if args.command == "capture":
        result = cmd_capture(args.out_dir, args.launches, args.timeout_s)
    elif args.command == "analyse":
        result = cmd_analyse(args.out_dir, args.trace, args.timeout_s)
    else:
        result = cmd_startup(args.out_dir)
    (args.out_dir / f"{args.command}.json").write_text(json.dumps(result, indent=2))
    text = markdown(result)
    (args.out_dir / f"{args.command}.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
