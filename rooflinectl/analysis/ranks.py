"""A distributed job's rank profiles read together: per-rank step time and communication, who
waited for whom, and one kernel table averaged over the ranks with its spread.

Each rank's profile carries its own figures (summary iteration_time_s, the steady-state step time,
and communication, over the same steps). Across ranks:
- collectives are matched by their order: the k-th launch of one c10d op on each rank is one
  collective (every rank of a data-parallel group issues the same collectives in the same order);
  a match whose ranks disagree on the message (other than an all-to-all's) is left unmatched.
- the transfer time of a matched collective is its shortest kernel over the ranks: the last rank
  to arrive waits least, its kernel is (nearly) all transfer; each rank's wait is its time minus
  that. No clock alignment is needed, so files from several hosts compare the same way.
- the straggler is the rank the others waited for: the least wait per step, with the others
  waiting at least STRAGGLER_MIN_WAIT of a step more than it; without collectives, the rank with
  the most device work per step.
- the merged kernel table (the `show --by kernel` view: a kernel's rows of several modules are one
  row, its module their common path): per group (kernel, op, shapes, dtype, unit, precision) the mean over
  the ranks of calls, time, FLOPs and bytes (a rank without the group counts zero; each rank's
  totals scaled to rank 0's count of steady-state iterations, should the counts differ), with the
  fastest and slowest rank's time; placed against rank 0's ceilings, rank -1 marking the merge.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from typing import Any

import numpy as np
import pandas as pd

from rooflinectl.aggregate import combined_cost_source, common_module, sum_known
from rooflinectl.analysis.json_values import json_ready, number_or_nan
from rooflinectl.analysis.links import link_at_size, message_bytes
from rooflinectl.analysis.roofline import place_on_roofline, summarise
from rooflinectl.costs.collectives import collective_kind
from rooflinectl.profile_model import ProfileData, iterations_of
from rooflinectl.schema import KERNEL_COLUMNS

MERGE_KEYS = ["kernel", "op", "shapes", "dtype", "unit", "precision"]
STRAGGLER_MIN_WAIT = 0.02  # others wait this share of a step more than the straggler: it is one
SPREAD_COLUMNS = ["time_min_s", "time_max_s", "slowest_rank"]
SETUP_MEANS = ("setup_kernel_time_s", "setup_launches", "setup_transfer_time_s", "setup_transfer_bytes", "run_wall_s",
               "setup_wall_s", "compile_s")


def rank_of(profile: ProfileData) -> int:
    return int(profile.metadata.get("rank") or 0)


def step_time_s(profile: ProfileData) -> float | None:
    """The rank's step time: the median steady-state iteration time (attribution/steady.py), None
    where no iteration was found."""
    value = profile.summary.get("iteration_time_s")
    return float(value) if isinstance(value, (int, float)) and value > 0 else None


def _records(profile: ProfileData) -> list[dict[str, Any]]:
    comm = profile.summary.get("communication") or {}
    fields = comm.get("collective_fields") or []
    return [dict(zip(fields, rec)) for rec in comm.get("collectives") or []]


def match_collectives(profiles: list[ProfileData]) -> list[dict[int, dict[str, Any]]]:
    """Collectives matched across ranks: [{rank: its launch record}], in the first rank's order."""
    by_rank: dict[int, dict[tuple[str, int], dict[str, Any]]] = {}
    for p in profiles:
        seen: dict[str, int] = defaultdict(int)
        keyed = {}
        for rec in _records(p):
            keyed[(rec["op"], seen[rec["op"]])] = rec
            seen[rec["op"]] += 1
        by_rank[rank_of(p)] = keyed
    if len(by_rank) < 2:
        return []
    first = next(iter(by_rank.values()))
    matches = []
    for key in first:
        group = {r: recs[key] for r, recs in by_rank.items() if key in recs}
        messages = {(rec["shapes"], rec["dtype"]) for rec in group.values()}
        if len(group) == len(by_rank) and (len(messages) == 1 or collective_kind(key[0]) == "all_to_all"):
            matches.append(group)
    return matches


def _waits(profiles: list[ProfileData], matches: list[dict[int, dict[str, Any]]]) -> dict[int, float]:
    """Seconds each rank waited in matched collectives (its time minus the shortest rank's)."""
    waits = {rank_of(p): 0.0 for p in profiles}
    for group in matches:
        shortest = min(rec["time_s"] for rec in group.values())
        for r, rec in group.items():
            waits[r] += rec["time_s"] - shortest
    return waits


Matches = list[dict[int, dict[str, Any]]]


def rank_table(profiles: list[ProfileData], matches: Matches) -> pd.DataFrame:
    """One row per rank: step time, device work, communication (overlapped, exposed, waited) per
    step. matches: match_collectives(profiles)."""
    waits = _waits(profiles, matches)
    rows = []
    for p in profiles:
        comm = p.summary.get("communication") or {}
        steps = float(comm.get("iterations") or iterations_of(p))
        step = step_time_s(p)
        busy = float(comm.get("compute_busy_s") or 0.0) + float(comm.get("busy_s") or 0.0) \
            - float(comm.get("overlapped_s") or 0.0)
        rows.append({
            "rank": rank_of(p), "host": str(p.metadata.get("host", "")), "local_rank": p.metadata.get("local_rank"),
            "step_time_s": step if step is not None else math.nan,
            "unprofiled_step_time_s": number_or_nan(p.summary.get("unprofiled_step_time_s")),  # --profile-steps
            "kernel_time_per_step_s": float(p.summary.get("total_kernel_time_s") or 0.0) / iterations_of(p),
            "compute_per_step_s": number_or_nan(comm.get("compute_busy_s")) / steps,
            "comm_per_step_s": number_or_nan(comm.get("busy_s")) / steps,
            "overlapped_per_step_s": number_or_nan(comm.get("overlapped_s")) / steps,
            "exposed_per_step_s": number_or_nan(comm.get("exposed_s")) / steps,
            "wait_per_step_s": waits.get(rank_of(p), math.nan) / steps if comm else math.nan,
            "idle_per_step_s": (step - busy / steps) if step is not None and comm else math.nan,
        })
    return pd.DataFrame(rows).sort_values("rank", kind="stable").reset_index(drop=True)


def straggler(ranks: pd.DataFrame) -> dict[str, Any] | None:
    """The rank the others waited for (or, without collectives, the one with the most device
    work per step), with the evidence; None with one rank or no clear straggler."""
    if len(ranks) < 2:
        return None
    step = float(ranks["step_time_s"].median()) if ranks["step_time_s"].notna().any() else math.nan
    if ranks["wait_per_step_s"].notna().all():
        i = int(ranks["wait_per_step_s"].idxmin())
        others = ranks.drop(index=i)
        gap = float(others["wait_per_step_s"].mean() - ranks.at[i, "wait_per_step_s"])
        if not math.isfinite(step) or gap < STRAGGLER_MIN_WAIT * step:
            return None
        how = "waited for"
    else:
        work = ranks["kernel_time_per_step_s"]
        i = int(work.idxmax())
        others = ranks.drop(index=i)
        gap = float(work.iloc[i] - others["kernel_time_per_step_s"].mean())
        if not math.isfinite(step) or gap < STRAGGLER_MIN_WAIT * step:
            return None
        how = "more device work"
    row = ranks.loc[i]
    return {"rank": int(row["rank"]), "how": how, "gap_per_step_s": gap, "step_time_s": step,
            "compute_per_step_s": float(row["compute_per_step_s"]),
            "others_compute_per_step_s": float(others["compute_per_step_s"].mean()),
            "idle_per_step_s": float(row["idle_per_step_s"]),
            "others_idle_per_step_s": float(others["idle_per_step_s"].mean())}


def merged_table(profiles: list[ProfileData]) -> pd.DataFrame:
    """The kernel table averaged over the ranks, with each group's fastest and slowest rank's time."""
    n = len(profiles)
    parts = []
    for p in profiles:
        table = p.kernels.copy()
        table["rank"] = rank_of(p)
        scale = iterations_of(profiles[0]) / iterations_of(p)  # to rank 0's count of iterations
        for column in ("calls", "time_s", "flops", "bytes"):
            table[column] = table[column] * scale
        parts.append(table)
    rows = pd.concat(parts, ignore_index=True)
    for key in MERGE_KEYS:
        rows[key] = rows[key].fillna("")
    grouped = rows.groupby(MERGE_KEYS, sort=False, dropna=False)
    per_rank = rows.pivot_table(index=MERGE_KEYS, columns="rank", values="time_s", aggfunc="sum", fill_value=0.0,
                                sort=False)
    out = grouped.agg(op_family=("op_family", "first"), module=("module", common_module), device=("device", "first"),
                      origin=("origin", "first"), calls=("calls", "sum"), time_s=("time_s", "sum"),
                      flops=("flops", sum_known), bytes=("bytes", sum_known), cost_source=("cost_source", combined_cost_source),
                      cost_note=("cost_note", "first"), blocks=("blocks", "median"),
                      threads_per_block=("threads_per_block", "median"),
                      sm_clock_mhz=("sm_clock_mhz", "mean"),
                      **({"memory_level": ("memory_level", "first")} if "memory_level" in rows.columns else {}),
                      ).reset_index()
    for column in ("calls", "time_s", "flops", "bytes"):
        out[column] = out[column] / n
    out["calls"] = out["calls"].round().astype(int).clip(lower=1)
    per_rank = per_rank.reindex(pd.MultiIndex.from_frame(out[MERGE_KEYS]))
    out["time_min_s"] = per_rank.min(axis=1).to_numpy() if len(profiles) == per_rank.shape[1] else 0.0
    out["time_max_s"] = per_rank.max(axis=1).to_numpy()
    out["slowest_rank"] = [int(per_rank.columns[j]) for j in np.argmax(per_rank.to_numpy(), axis=1)] if len(out) else []
    out["rank"] = -1
    placed = place_on_roofline(out, profiles[0].ceilings)
    columns = [c for c in KERNEL_COLUMNS if c in placed.columns] + SPREAD_COLUMNS
    return placed[columns].sort_values("time_s", ascending=False, kind="stable").reset_index(drop=True)


def collective_groups(profiles: list[ProfileData], matches: Matches) -> list[dict[str, Any]]:
    """Per collective (op, message), over the matched launches: calls per rank, time per call
    (mean over ranks), transfer time per call (the shortest rank's), waiting, exposed time, the
    bus bandwidth of the transfer and the link at that message size (measured curve) and peak."""
    ceilings = profiles[0].ceilings
    link = ceilings.link()
    grouped: dict[tuple[str, str, str], list[dict[int, dict[str, Any]]]] = defaultdict(list)
    for group in matches:
        rec = next(iter(group.values()))
        grouped[(rec["op"], rec["shapes"], rec["dtype"])].append(group)
    out = []
    for (op, shapes, dtype), groups in grouped.items():
        transfer = [min(r["time_s"] for r in g.values()) for g in groups]
        mean = [statistics.fmean(r["time_s"] for r in g.values()) for g in groups]
        exposed = [statistics.fmean(r["exposed_s"] for r in g.values()) for g in groups]
        sizes = [[r["bytes"] or 0.0 for r in g.values()] for g in groups]
        bus = statistics.fmean(statistics.fmean(s) for s in sizes)
        size = message_bytes(shapes, dtype)
        busbw = bus / statistics.fmean(transfer) if statistics.fmean(transfer) > 0 else math.nan
        out.append({
            "op": op, "shapes": shapes, "dtype": dtype, "size_bytes": size, "calls": len(groups),
            "bus_bytes_per_call": bus, "time_per_call_s": statistics.fmean(mean),
            "transfer_per_call_s": statistics.fmean(transfer),
            "wait_per_call_s": statistics.fmean(mean) - statistics.fmean(transfer),
            "exposed_per_call_s": statistics.fmean(exposed), "bus_bytes_per_s": busbw,
            "link_at_size_bytes_per_s": link_at_size(ceilings, size),
            "link_bytes_per_s": link.value if link is not None else math.nan,
            "link_source": link.source if link is not None else "",
            "imbalance": max((max(s) / statistics.fmean(s) for s in sizes if statistics.fmean(s) > 0), default=1.0),
        })
    return sorted(out, key=lambda g: -g["time_per_call_s"] * g["calls"])


def merge_ranks(profiles: list[ProfileData], paths: list[str] | None = None) -> ProfileData:
    """One profile standing for the job: the merged kernel table (per rank, on average), a summary
    whose times are the ranks' means, and summary["distributed"] with the per-rank figures."""
    profiles = sorted(profiles, key=rank_of)
    table = merged_table(profiles)
    matches = match_collectives(profiles)  # launch matching across ranks: the costly part, done once
    ranks = rank_table(profiles, matches)
    means = {key: statistics.fmean(float(p.summary.get(key) or 0.0) for p in profiles)
             for key in ("window_s", "device_idle_s", "launches", "short_launches")}
    empty = pd.DataFrame({"start_ns": [], "end_ns": [], "time_s": []})
    own = _merged_rows(profiles[0], table)
    summary = summarise(table, empty, means["window_s"], _sequence(own, profiles[0]), int(iterations_of(profiles[0])))
    summary["back_to_back_runs"] = _runs(own, profiles[0])
    summary.update({"device_busy_s": means["window_s"] - means["device_idle_s"], "device_idle_s": means["device_idle_s"],
                    "launches": int(round(means["launches"])), "short_launches": int(round(means["short_launches"])),
                    "regions": profiles[0].summary.get("regions") or [], "clocks": None})
    for key in ("iterations_method", "iterations_marker", "iterations_found", "warmup_iterations",
                "profile_steps", "profile_steps_stopped", "profile_steps_marker", "profile_steps_marker_name",
                "unprofiled_timed_by"):
        summary[key] = profiles[0].summary.get(key)  # how rank 0's steps were found: the others' alike
    for key in SETUP_MEANS:  # the setup, on average over the ranks
        values = [float(p.summary[key]) for p in profiles if isinstance(p.summary.get(key), (int, float))]
        summary[key] = statistics.fmean(values) if values else None
    steps = [t for t in (step_time_s(p) for p in profiles) if t is not None]
    summary["iteration_time_s"] = statistics.median(steps) if steps else None
    unprofiled = [float(p.summary["unprofiled_step_time_s"]) for p in profiles
                  if isinstance(p.summary.get("unprofiled_step_time_s"), (int, float))]
    if unprofiled:  # --profile-steps: each rank timed its own later steps; their median, and the fewest timed
        summary["unprofiled_step_time_s"] = statistics.median(unprofiled)
        summary["unprofiled_steps"] = min(int(p.summary.get("unprofiled_steps") or 0) for p in profiles)
    world = int(profiles[0].metadata.get("world_size") or len(profiles))
    found = set(ranks["rank"])
    summary["distributed"] = json_ready({
        "world_size": world, "ranks_found": sorted(int(r) for r in found),
        "missing_ranks": [r for r in range(world) if r not in found],
        "files": dict(zip([rank_of(p) for p in profiles], paths or [])),
        "ranks": ranks.to_dict(orient="records"),
        "straggler": _with_kernels(straggler(ranks), profiles),
        "collectives": collective_groups(profiles, matches),
        "step_time_s": float(ranks["step_time_s"].median()) if ranks["step_time_s"].notna().any() else None,
        "steps": min(int((p.summary.get("communication") or {}).get("iterations") or 1) for p in profiles),
    })
    metadata = {**profiles[0].metadata, "rank": -1, "merged_ranks": sorted(int(r) for r in found)}
    return ProfileData(kernels=table, ceilings=profiles[0].ceilings, metadata=metadata, summary=summary)


def _merged_rows(first: ProfileData, table: pd.DataFrame) -> list[int | None]:
    """For each row of the first rank's table, its row in the merged table (None: not there)."""
    position = {tuple(k): i for i, k in enumerate(table[MERGE_KEYS].fillna("").itertuples(index=False, name=None))}
    return [position.get(tuple(k)) for k in first.kernels[MERGE_KEYS].fillna("").itertuples(index=False, name=None)]


def _sequence(own: list[int | None], first: ProfileData) -> list[int]:
    """The first rank's launch order as rows of the merged table (what the fusion rules follow)."""
    return [own[i] for i in first.summary.get("launch_sequence") or [] if 0 <= i < len(own) and own[i] is not None]


def _runs(own: list[int | None], first: ProfileData) -> list[dict[str, Any]] | None:
    """The first rank's back-to-back runs on rows of the merged table (what gemm.batch-small reads)."""
    runs = first.summary.get("back_to_back_runs")
    if runs is None:
        return None
    return [{**e, "row": own[e["row"]]} for e in runs if 0 <= e["row"] < len(own) and own[e["row"]] is not None]


def _with_kernels(found: dict[str, Any] | None, profiles: list[ProfileData]) -> dict[str, Any] | None:
    if found is not None:
        found["kernels"] = straggler_kernels(profiles, found["rank"])
    return found


def straggler_kernels(profiles: list[ProfileData], rank: int, top: int = 5) -> list[dict[str, Any]]:
    """The non-collective kernel groups whose time on `rank` differs most from the other ranks' median."""
    per_rank = {rank_of(p): p.kernels[p.kernels["op_family"] != "collective"] for p in profiles}
    if rank not in per_rank or len(per_rank) < 2:
        return []
    keyed = {r: t.groupby(MERGE_KEYS[:4], dropna=False)["time_s"].sum() for r, t in per_rank.items()}
    mine = keyed[rank]
    others = pd.concat([v for r, v in keyed.items() if r != rank], axis=1).fillna(0.0).median(axis=1)
    both = pd.concat([mine.rename("rank_s"), others.rename("others_s")], axis=1).fillna(0.0)
    both["diff_s"] = both["rank_s"] - both["others_s"]
    both = both.reindex(both["diff_s"].abs().sort_values(ascending=False).index).head(top)
    return [{"kernel": k[0], "op": k[1], "shapes": k[2], "rank_s": float(r.rank_s), "others_s": float(r.others_s),
             "diff_s": float(r.diff_s)} for k, r in both.iterrows()]
