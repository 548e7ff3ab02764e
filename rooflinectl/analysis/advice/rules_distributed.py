"""Rules about communication between ranks: exposed collectives, stragglers, collectives far below
the link, and all-to-all imbalance. They read one rank's summary["communication"] or, for the rank
profiles of a job read together, summary["distributed"] (analysis/ranks.py)."""

from __future__ import annotations

import math
from typing import Any

from rooflinectl.analysis.advice.common import cell_text
from rooflinectl.analysis.advice.registry import AdviceContext, Finding, make_finding, rule
from rooflinectl.analysis.json_values import number_or_nan
from rooflinectl.analysis.links import link_at_size, message_bytes
from rooflinectl.costs.collectives import collective_kind
from rooflinectl.units import percent, seconds, si

MIN_EXPOSED_SHARE = 0.05  # exposed communication from this share of a step
BELOW_LINK_SHARE = 0.5  # a collective's transfer under this share of the link's peak
MIN_IMBALANCE = 1.2  # the heaviest rank's all-to-all message over the mean
MIN_COLLECTIVE_SHARE = 0.01  # collectives holding less of the kernel time than this are not worth a finding


def _collective_rows(ctx: AdviceContext) -> tuple[int, ...]:
    return tuple(int(i) for i in ctx.kernels.index[ctx.kernels["op_family"] == "collective"])


def _distributed(ctx: AdviceContext) -> dict[str, Any]:
    return ctx.summary.get("distributed") or {}


def _steps(comm: dict[str, Any]) -> float:
    return float(comm.get("iterations") or 1)


@rule(id="comm.exposed", title="Overlap communication with compute", severity="warning")
def exposed(ctx: AdviceContext) -> list[Finding]:
    """Collectives ran with nothing else on the device (exposed) for at least 5% of a step: the
    step waited for the network. Measured on the device timeline: collective time not covered by
    any other kernel (analysis/communication.py).

    Estimate: the exposed time per step, less what the ranks spent waiting for each other in
    those collectives when all ranks' profiles are read together (waiting is the straggler's
    finding, not overlap's), times the steps measured. One rank's profile alone cannot tell waiting
    from transfer: its estimate is an upper bound.
    """
    dist = _distributed(ctx)
    rows = _collective_rows(ctx)
    if dist.get("ranks"):
        ranks = dist["ranks"]
        per_step = [r["exposed_per_step_s"] for r in ranks if _finite(r.get("exposed_per_step_s"))]
        waits = [r["wait_per_step_s"] for r in ranks if _finite(r.get("wait_per_step_s"))]
        if not per_step:
            return []
        exposed_s = sum(per_step) / len(per_step)
        wait_s = min(sum(waits) / len(waits), exposed_s) if waits else 0.0
        step_s = dist.get("step_time_s") or math.nan
        steps = float(dist.get("steps") or 1)
        where = f"over {len(ranks)} ranks, mean per step"
    else:
        comm = ctx.summary.get("communication") or {}
        if not comm:
            return []
        exposed_s, wait_s = float(comm["exposed_per_iteration_s"]), 0.0
        step_s = float(ctx.summary.get("iteration_time_s") or math.nan)
        steps = _steps(comm)
        where = "on this rank, per step"
    if not _finite(step_s) or step_s <= 0 or exposed_s < MIN_EXPOSED_SHARE * step_s:
        return []
    saving = max(exposed_s - wait_s, 0.0) * steps
    evidence = (f"Collectives ran alone on the device {seconds(exposed_s)} per step ({where}), "
                f"{percent(exposed_s / step_s)} of a {seconds(step_s)} step"
                + (f"; {seconds(wait_s)} of it was waiting for other ranks." if wait_s > 0 else
                   "." if dist.get("ranks") else "; read all ranks' profiles together to separate waiting for other ranks."))
    return [make_finding(
        "comm.exposed", evidence=evidence,
        recommendation=("Start communication while backward still runs: DDP sends a bucket when it is full, so "
                        "tune bucket_cap_mb (smaller buckets start sooner; the last bucket is always exposed) and "
                        "pass gradient_as_bucket_view=True; with gradient accumulation wrap all but the last "
                        "micro-step in ddp.no_sync(); FSDP: backward_prefetch=BackwardPrefetch.BACKWARD_PRE and "
                        "forward_prefetch=True (FSDP2: set_modules_to_forward_prefetch), so the next all-gather "
                        "overlaps the current layer."),
        est_saving_s=saving, rows=rows, subject="communication",
        numbers={"exposed_per_step_s": exposed_s, "wait_per_step_s": wait_s, "step_time_s": step_s, "steps": steps})]


@rule(id="rank.straggler", title="One rank holds the others back", severity="warning")
def straggler(ctx: AdviceContext) -> list[Finding]:
    """With all ranks' profiles read together: the other ranks waited in collectives for one rank
    (the last to arrive has the shortest collective kernels) at least 2% of a step more than it
    did. Its own figures tell where the delay comes from: more device work (its kernels take
    longer: the kernels that differ most are listed) or more device idle time (its host launched
    later: input pipeline, CPU contention, Python work).

    Estimate: the others' extra waiting per step times the steps measured: what they would save if
    the straggler kept pace.
    """
    found = _distributed(ctx).get("straggler")
    if not found:
        return []
    steps = float(_distributed(ctx).get("steps") or 1)
    rank = found["rank"]
    extra_work = number_or_nan(found.get("compute_per_step_s")) - number_or_nan(found.get("others_compute_per_step_s"))
    extra_idle = number_or_nan(found.get("idle_per_step_s")) - number_or_nan(found.get("others_idle_per_step_s"))
    kernels = [k for k in found.get("kernels") or [] if abs(k["diff_s"]) > 0]
    if found["how"] == "waited for" and _finite(extra_idle) and extra_idle > max(extra_work, 0.0):
        cause = (f"its device work per step is {seconds(found['compute_per_step_s'])} (others "
                 f"{seconds(found['others_compute_per_step_s'])}) but its GPU sat idle {seconds(extra_idle)} more per "
                 "step: its host launched the work later")
        fix = (f"Look at rank {rank}'s host side: its input pipeline (DataLoader num_workers, pin_memory, prefetch), "
               "CPU affinity (bind each rank to the cores of its GPU's NUMA node), other processes on its CPUs, and "
               "Python work only it does (logging, checkpointing, metrics on one rank).")
    else:
        listed = "; ".join(f"{k['op'] or k['kernel'][:40]} {seconds(k['rank_s'])} vs {seconds(k['others_s'])}"
                           for k in kernels[:3])
        cause = (f"its device work per step is {seconds(found['compute_per_step_s'])} against "
                 f"{seconds(found['others_compute_per_step_s'])} on the others"
                 + (f"; the kernels that differ most: {listed}" if listed else ""))
        fix = (f"Give rank {rank} the same work as the others (uneven batches or sequence lengths, a data shard "
               f"with longer samples), and check its GPU: `rooflinectl advise` on rank {rank}'s own profile reports "
               "capped clocks (clocks.throttled) and other processes (gpu.shared).")
    share = f"{percent(found['gap_per_step_s'] / found['step_time_s'])} of a {seconds(found['step_time_s'])} step"
    evidence = (f"The other ranks waited {seconds(found['gap_per_step_s'])} per step longer than rank {rank} in "
                f"collectives ({share}); {cause}." if found["how"] == "waited for" else
                f"Rank {rank} ran {seconds(found['gap_per_step_s'])} more device work per step than the mean of the "
                f"others ({share}); {cause}.")
    return [make_finding(
        "rank.straggler", evidence=evidence, recommendation=fix, est_saving_s=found["gap_per_step_s"] * steps,
        rows=_collective_rows(ctx), subject=f"rank {rank}",
        numbers={"rank": float(rank), "wait_gap_per_step_s": found["gap_per_step_s"],
                 "extra_work_per_step_s": extra_work, "extra_idle_per_step_s": extra_idle})]


@rule(id="comm.below-link", title="Collectives far below the link's bandwidth", severity="warning")
def below_link(ctx: AdviceContext) -> list[Finding]:
    """A collective whose transfer reaches under half the link roof's bus bandwidth and holds at
    least 1% of kernel time. With all ranks read together the transfer is the shortest rank's
    kernel (no waiting); a single rank's profile speaks only of messages too small for the link
    (its kernel times also hold waiting). Where the measured all-reduce curve is itself under half
    its peak at the message size, the messages are too small: bucket them; otherwise the link
    reached more at that size when measured: the collectives compete for it (or for the SMs).

    Estimate: small messages: the calls' transfer time less the same bus bytes sent as one message
    of their total size at the link's measured bandwidth for that size (its peak without a curve);
    large ones: the transfer time less the same bytes at the link's bandwidth for their size.
    """
    link = ctx.ceilings.link()
    if link is None:
        return []
    total_s = ctx.total_kernel_time_s
    findings = []
    for g in _groups(ctx):
        time_s = g["transfer_per_call_s"] * g["calls"]
        if not _finite(g["bus_bytes_per_s"]) or g["bus_bytes_per_s"] >= BELOW_LINK_SHARE * link.value \
                or total_s <= 0 or time_s < MIN_COLLECTIVE_SHARE * total_s:
            continue
        at_size = link_at_size(ctx.ceilings, g["size_bytes"])
        small = (at_size < BELOW_LINK_SHARE * link.value) if _finite(at_size) else g["size_bytes"] < (1 << 20)
        if not small and not g["matched"]:
            continue  # one rank's kernel time holds waiting: only the small-message case is safe to call
        bus_total = g["bus_bytes_per_call"] * g["calls"]
        if small:
            bucket_bw = link_at_size(ctx.ceilings, g["size_bytes"] * g["calls"])
            saving = time_s - bus_total / (bucket_bw if _finite(bucket_bw) else link.value)
            fix = ("Send fewer, larger messages: raise DDP's bucket_cap_mb, wrap FSDP around larger modules (fewer, "
                   "bigger all-gathers and reduce-scatters), or flatten small tensors into one buffer before one "
                   "collective (torch.distributed's coalescing manager).")
        else:
            saving = time_s - bus_total / (at_size if _finite(at_size) else link.value)
            fix = ("The link reached more at this message size when measured: the collectives share it, or NCCL "
                   "has too few SMs against the compute kernels running beside them (NCCL_MIN_NCHANNELS), or the "
                   "GPUs talk over PCIe (check `rooflinectl ceilings` topology: NVLink P2P).")
        findings.append(make_finding(
            "comm.below-link",
            evidence=(f"{g['op']} of {si(g['size_bytes'], 'B')} ({g['calls']} calls) moved {si(g['bus_bytes_per_s'], 'B/s')} "
                      f"of bus bandwidth, {percent(g['bus_bytes_per_s'] / link.value)} of the {si(link.value, 'B/s')} link "
                      f"({link.source})" + (f"; the link reached {si(at_size, 'B/s')} at this size when measured" if
                                            _finite(at_size) else "") + "."),
            recommendation=fix, est_saving_s=max(saving, 0.0), rows=g["rows"], subject=g["op"],
            numbers={"size_bytes": g["size_bytes"], "bus_bytes_per_s": g["bus_bytes_per_s"], "link_bytes_per_s": link.value,
                     "calls": float(g["calls"])}))
    return findings


@rule(id="comm.alltoall-imbalance", title="Balance the all-to-all (MoE token routing)", severity="warning")
def alltoall_imbalance(ctx: AdviceContext) -> list[Finding]:
    """With all ranks read together: an all-to-all whose heaviest rank moves at least 1.2x the
    mean message of the ranks (mixture-of-experts dispatch with uneven expert load): every rank
    waits for the heaviest one.

    Estimate: the all-to-all's time per call x calls x (1 - mean / heaviest): what even messages
    would take at the same bandwidth.
    """
    findings = []
    for g in (_distributed(ctx).get("collectives") or []):
        if collective_kind(g["op"]) != "all_to_all":
            continue
        ratio = float(g.get("imbalance") or 1.0)
        if ratio < MIN_IMBALANCE:
            continue
        saving = g["time_per_call_s"] * g["calls"] * (1.0 - 1.0 / ratio)
        findings.append(make_finding(
            "comm.alltoall-imbalance",
            evidence=(f"{g['op']}: the heaviest rank's message is {ratio:.2f}x the mean over the ranks "
                      f"({g['calls']} calls, {seconds(g['time_per_call_s'])} each)."),
            recommendation=("Even out the experts' load: an auxiliary load-balancing loss, a capacity factor that "
                            "drops or re-routes overflow tokens, or placing hot experts on different ranks."),
            est_saving_s=saving, rows=_collective_rows(ctx), subject=g["op"], numbers={"imbalance": ratio}))
    return findings


def _groups(ctx: AdviceContext) -> list[dict[str, Any]]:
    """Collective groups with their transfer time: matched across ranks where the profile merges
    ranks, else one rank's own collective rows (kernel time, waiting included)."""
    rows_of = {}
    for i, row in ctx.kernels[ctx.kernels["op_family"] == "collective"].iterrows():
        rows_of.setdefault((cell_text(row, "op"), cell_text(row, "shapes")), []).append(int(i))
    merged = _distributed(ctx).get("collectives")
    if merged:
        return [{**g, "matched": True, "rows": tuple(rows_of.get((g["op"], g["shapes"]), ()))} for g in merged]
    out = []
    for (op, shapes), rows in rows_of.items():
        part = ctx.kernels.loc[rows]
        calls, time_s, bus = float(part["calls"].sum()), float(part["time_s"].sum()), float(part["bytes"].sum())
        if calls <= 0 or time_s <= 0:
            continue
        out.append({"op": op, "size_bytes": message_bytes(shapes, cell_text(part.iloc[0], "dtype")), "calls": int(calls),
                    "transfer_per_call_s": time_s / calls, "bus_bytes_per_call": bus / calls,
                    "bus_bytes_per_s": bus / time_s, "matched": False, "rows": tuple(rows)})
    return out


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)
