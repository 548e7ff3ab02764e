"""The multi-GPU figures of scripts/gpu.d/80-distributed.sh, as markdown for docs/benchmarks/distributed.md.

Usage: python3 scripts/bench_distributed.py OUT_DIR
Reads what the piece left in OUT_DIR: ceilings.json (`rooflinectl ceilings --format json` after
--measure), plain.log (the un-profiled run's TIMING lines, one per rank), and for each DDP bucket
size B the rank profiles bB.rank{0,1}.json and the profiled run's log bB.log. Writes
OUT_DIR/distributed.md and OUT_DIR/distributed.json; prints the markdown.

- Link: the all-reduce bus bandwidth (nccl-tests busbw) `ceilings --measure` measured between the
  GPUs at each message size, and the topology it saw.
- Step time per rank: the profile's steady-state iteration time against the un-profiled run's
  CUDA-event median (same arguments, bucket 25 MB); the target is within 5%.
- All-reduce against the link: per collective of the bucket-25 run, its transfer bus bandwidth
  (the shortest rank's kernel) and the link's, at its message size and at its peak.
- Exposed communication per step against the bucket size (1, 25, 400 MB): it should move.
- Stray contexts: processes NVML saw on each rank's GPU besides the rank itself.
"""

from __future__ import annotations

import datetime as dt
import json
import statistics
import sys
from pathlib import Path
from typing import Any

from rooflinectl.analysis.ranks import merge_ranks
from rooflinectl.outputs.profile_file import load_profile
from rooflinectl.units import percent, seconds, si

BUCKETS_MB = (1, 25, 400)


def timing_lines(path: Path) -> dict[int, dict[str, Any]]:
    """rank -> the TIMING record it printed (two processes share the log: split on the marker)."""
    decoder = json.JSONDecoder()
    text = path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
    out = {}
    for part in text.split("TIMING ")[1:]:
        try:
            record = decoder.raw_decode(part)[0]
        except ValueError:
            continue
        out[int(record.get("rank", 0))] = record
    return out


def link_section(ceilings: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
    rows = [m for m in ceilings.get("details", {}).get("measurements", []) if str(m.get("key", "")).startswith("link.")]
    sizes = sorted((int(m["key"].rsplit(".", 1)[1]), m) for m in rows
                   if m["key"].rsplit(".", 1)[1].isdigit() and m.get("value"))
    roof = (ceilings.get("link_bytes_per_s") or {}).get("intra_node") or {}
    topo = next((m.get("details") for m in rows if m["key"] == "link.topology"), {}) or {}
    lines = ["## The link: all-reduce bus bandwidth between the two GPUs", "",
             f"Link roof: {si(roof.get('value'), 'B/s')} ({roof.get('source', '-')}): {roof.get('note', '')}", ""]
    if sizes:
        lines += ["| message size | bus bandwidth (nccl-tests busbw) | how |", "|---:|---:|---|"]
        lines += [f"| {si(size, 'B')} | {si(m['value'], 'B/s')} | {m.get('method', '')} |" for size, m in sizes]
        lines.append("")
    else:
        lines += ["No per-size link measurement in the ceilings (see the piece log).", ""]
    gpus = topo.get("gpus") or []
    if gpus:
        lines.append("Topology seen: " + "; ".join(
            f"GPU {g.get('index')} {g.get('name')}: {g.get('nvlink_active')} NVLink links up (version {g.get('nvlink_version')}),"
            f" PCIe Gen{g.get('pcie_gen')} x{g.get('pcie_width')}" for g in gpus)
            + f"; NVLink P2P pairs {topo.get('p2p_nvlink')}.")
        if topo.get("nvidia_smi_topo"):
            lines += ["", "```", topo["nvidia_smi_topo"], "```"]
        lines.append("")
    return lines, {"roof": roof, "curve": [[s, m["value"]] for s, m in sizes], "topology": topo}


def step_section(plain: dict[int, dict[str, Any]], profiles: list[Any]) -> tuple[list[str], list[dict[str, Any]]]:
    lines = ["## Step time per rank: profiled against the un-profiled run", "",
             "| rank | un-profiled (CUDA events, median) | profiled (steady-state iterations, median) | difference |",
             "|---:|---:|---:|---:|"]
    rows = []
    for p in profiles:
        rank = int(p.metadata.get("rank") or 0)
        ours = p.summary.get("iteration_time_s")
        theirs = statistics.median(plain[rank]["iter_ms"]) / 1e3 if rank in plain else None
        diff = ours / theirs - 1 if ours and theirs else None
        rows.append({"rank": rank, "unprofiled_s": theirs, "profiled_s": ours, "difference": diff})
        lines.append(f"| {rank} | {seconds(theirs)} | {seconds(ours)} ({p.summary.get('iterations')} iterations) | "
                     f"{'-' if diff is None else f'{100 * diff:+.1f}%'} |")
    lines.append("")
    return lines, rows


def collectives_section(merged: Any) -> tuple[list[str], list[dict[str, Any]]]:
    groups = merged.summary["distributed"]["collectives"]
    lines = ["## All-reduce kernels against the link (bucket 25 MB)", "",
             "| collective | message | calls | time per call (mean of ranks) | transfer (shortest rank) | waited | "
             "transfer busbw | link at this size | link peak | % of peak |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for g in groups:
        peak = g.get("link_bytes_per_s")
        lines.append(f"| {g['op']} | {si(g['size_bytes'], 'B')} {g['dtype']} | {g['calls']} | {seconds(g['time_per_call_s'])} | "
                     f"{seconds(g['transfer_per_call_s'])} | {seconds(g['wait_per_call_s'])} | {si(g['bus_bytes_per_s'], 'B/s')} | "
                     f"{si(g.get('link_at_size_bytes_per_s'), 'B/s')} | {si(peak, 'B/s')} | "
                     f"{percent(g['bus_bytes_per_s'] / peak) if peak else '-'} |")
    lines.append("")
    return lines, groups


def exposed_section(runs: dict[int, Any]) -> tuple[list[str], list[dict[str, Any]]]:
    lines = ["## Exposed communication per step against DDP's bucket size", "",
             "| bucket_cap_mb | step (median of ranks) | collectives per step | communication per step | overlapped | "
             "exposed | waited (mean of ranks) | straggler |", "|---:|---:|---:|---:|---:|---:|---:|---|"]
    rows = []
    for mb, merged in runs.items():
        dist = merged.summary["distributed"]
        ranks = dist["ranks"]

        def mean(key: str, ranks: list[dict[str, Any]] = ranks) -> float | None:
            values = [r[key] for r in ranks if isinstance(r.get(key), (int, float))]
            return statistics.fmean(values) if values else None

        per_step = sum(g["calls"] for g in dist["collectives"]) / max(dist.get("steps") or 1, 1)
        straggler = dist.get("straggler")
        row = {"bucket_mb": mb, "step_s": dist.get("step_time_s"), "collectives_per_step": per_step,
               "comm_per_step_s": mean("comm_per_step_s"), "overlapped_per_step_s": mean("overlapped_per_step_s"),
               "exposed_per_step_s": mean("exposed_per_step_s"), "wait_per_step_s": mean("wait_per_step_s"),
               "straggler": straggler["rank"] if straggler else None}
        rows.append(row)
        lines.append(f"| {mb} | {seconds(row['step_s'])} | {per_step:.1f} | {seconds(row['comm_per_step_s'])} | "
                     f"{seconds(row['overlapped_per_step_s'])} | {seconds(row['exposed_per_step_s'])} | "
                     f"{seconds(row['wait_per_step_s'])} | {'-' if row['straggler'] is None else 'rank ' + str(row['straggler'])} |")
    lines.append("")
    return lines, rows


def stray_contexts(profiles: list[Any]) -> list[str]:
    """Processes NVML listed on each rank's GPU other than the rank itself (a context another rank
    opened there by mistake shows here)."""
    out = []
    for p in profiles:
        nvml = p.metadata.get("nvml") or {}
        device = (nvml.get("devices") or [{}])[0]
        own = nvml.get("own_pid")
        others = sorted({pid for _, procs in device.get("processes") or [] for pid, _ in procs if pid != own})
        out.append(f"rank {p.metadata.get('rank')} on GPU {device.get('index')} ({nvml.get('status')}): "
                   f"other processes seen {others or 'none'}")
    return out


def main() -> int:
    out = Path(sys.argv[1])
    ceilings = json.loads((out / "ceilings.json").read_text())["ceilings"] if (out / "ceilings.json").exists() else {}
    plain = timing_lines(out / "plain.log")
    runs, profiles_25 = {}, []
    for mb in BUCKETS_MB:
        files = sorted(out.glob(f"b{mb}.rank*.json"))
        if len(files) >= 2:
            profiles = [load_profile(f) for f in files]
            runs[mb] = merge_ranks(profiles, [str(f) for f in files])
            if mb == 25:
                profiles_25 = profiles
    device = (profiles_25[0].metadata.get("device_name") if profiles_25 else None) or ceilings.get("device_name", "?")
    torch_version = profiles_25[0].metadata.get("torch") if profiles_25 else "?"
    lines = [f"# Multi-GPU: DDP GPT-2 small on two GPUs ({device}), {dt.date.today().isoformat()}", "",
             "Written by scripts/bench_distributed.py from scripts/gpu.d/80-distributed.sh: "
             "`examples/real/ddp_train.py --model gpt2 --layers 12 --batch 8 --seq 1024 --warmup 3 --steps 5` on 2 GPUs "
             f"(torchrun, NCCL, NVLS off), torch {torch_version}.", ""]
    link_lines, link = link_section(ceilings)
    lines += link_lines
    steps_lines, steps = step_section(plain, profiles_25) if profiles_25 else (["No bucket-25 profiles."], [])
    lines += steps_lines
    coll_lines, collectives = collectives_section(runs[25]) if 25 in runs else ([], [])
    lines += coll_lines
    exp_lines, exposed = exposed_section(runs)
    lines += exp_lines
    lines += ["## Each rank's GPU", "", *[f"- {line}" for line in stray_contexts(profiles_25)], ""]
    text = "\n".join(lines) + "\n"
    (out / "distributed.md").write_text(text, encoding="utf-8")
    (out / "distributed.json").write_text(json.dumps({"link": link, "steps": steps, "collectives": collectives,
                                                      "exposed": exposed}, indent=1, default=str), encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
