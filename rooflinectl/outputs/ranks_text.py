"""The multi-rank view as rich renderables: per-rank step time and communication, the straggler,
and the collectives against the link. Renders summary["distributed"] (analysis/ranks.py); never prints."""

from __future__ import annotations

import math
from typing import Any

from rich import box
from rich.table import Table
from rich.text import Text

from rooflinectl.outputs.escape import plain, rich_text
from rooflinectl.profile_sections import RunMetadata, Summary
from rooflinectl.units import percent, seconds, si


def _s(value: Any) -> str:
    return seconds(float(value)) if value is not None else "-"


def ranks_table(distributed: dict[str, Any]) -> Table:
    """One row per rank: step time and, per step, device work, communication, exposed, waited, idle."""
    straggler = (distributed.get("straggler") or {}).get("rank")
    grid = _table("per rank, per step (device time)")
    rows = distributed.get("ranks") or []
    unprofiled = any(_finite(r.get("unprofiled_step_time_s")) for r in rows)  # --profile-steps
    names = ["rank", "host", "step", *(["unprofiled"] if unprofiled else []),
             "compute", "comm", "overlapped", "exposed", "waited", "idle"]
    for name in names:
        grid.add_column(name, justify="left" if name == "host" else "right", no_wrap=name != "host")
    for r in rows:
        mark = " *" if r["rank"] == straggler else ""
        grid.add_row(f"{r['rank']}{mark}", rich_text(str(r.get("host") or "")), _s(r.get("step_time_s")),
                     *([_s(r.get("unprofiled_step_time_s"))] if unprofiled else []),
                     _s(r.get("compute_per_step_s")), _s(r.get("comm_per_step_s")), _s(r.get("overlapped_per_step_s")),
                     _s(r.get("exposed_per_step_s")), _s(r.get("wait_per_step_s")), _s(r.get("idle_per_step_s")))
    return grid


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


def straggler_lines(distributed: dict[str, Any]) -> list[str]:
    """The straggler in a sentence or two (or that there is none), and the missing ranks."""
    lines = []
    missing = distributed.get("missing_ranks") or []
    if missing:
        lines.append(f"missing rank profiles: {', '.join(map(str, missing))} of {distributed.get('world_size')}")
    s = distributed.get("straggler")
    if s is None:
        if len(distributed.get("ranks") or []) > 1:
            lines.append("no straggler: no rank waited for another more than 2% of a step")
        return lines
    if s["how"] == "waited for":
        lines.append(f"straggler: rank {s['rank']} (*): the other ranks waited {seconds(s['gap_per_step_s'])} per step "
                     f"more than it in collectives ({percent(s['gap_per_step_s'] / s['step_time_s'])} of a step)")
        lines.append(f"  its device work {seconds(s['compute_per_step_s'])} per step (others "
                     f"{seconds(s['others_compute_per_step_s'])}), its device idle {seconds(s['idle_per_step_s'])} "
                     f"(others {seconds(s['others_idle_per_step_s'])})")
    else:
        lines.append(f"straggler: rank {s['rank']} (*) ran {seconds(s['gap_per_step_s'])} more device work per step "
                     "than the mean of the others")
    return lines


def collectives_table(distributed: dict[str, Any]) -> Table | None:
    """Per collective: message, time per call split into transfer and waiting, exposed time, and
    the transfer's bus bandwidth against the link (at that message size, and its peak)."""
    groups = distributed.get("collectives") or []
    if not groups:
        return None
    peak = groups[0].get("link_bytes_per_s")
    link = (f"link {si(peak, 'B/s')} ({plain(groups[0].get('link_source') or '-')})"
            if isinstance(peak, (int, float)) and math.isfinite(peak) else "no link roof")
    grid = _table(f"collectives per call, matched across ranks (transfer: the shortest rank's kernel); {link}")
    for name in ("op", "message", "calls", "transfer", "waited", "exposed", "busbw", "link@size", "% link"):
        grid.add_column(name, justify="left" if name == "op" else "right", no_wrap=name != "op")
    for g in groups:
        share = g["bus_bytes_per_s"] / peak if isinstance(peak, (int, float)) and peak > 0 else None
        grid.add_row(rich_text(str(g["op"])), f"{si(g['size_bytes'], 'B')} {plain(g['dtype'])}", str(g["calls"]),
                     seconds(g["transfer_per_call_s"]), seconds(g["wait_per_call_s"]), seconds(g["exposed_per_call_s"]),
                     si(g["bus_bytes_per_s"], "B/s"), si(g.get("link_at_size_bytes_per_s"), "B/s"), percent(share))
    return grid


def _table(title: str) -> Table:
    """The style of the kernel table: a rule under the header, no outer box."""
    return Table(title=Text(title), title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
                 padding=(0, 1, 0, 0), header_style="bold")


def communication_lines(summary: Summary, metadata: RunMetadata) -> list[str]:
    """Summary lines of one rank's profile: its place in the job and its communication."""
    lines = []
    if metadata.get("world_size") and int(metadata.get("rank", 0)) >= 0 and "distributed" not in summary:
        lines.append(f"rank {metadata.get('rank')} of {metadata['world_size']} (local rank {metadata.get('local_rank')}, "
                     f"host {metadata.get('host')}); `rooflinectl show` on all ranks' files compares them")
    comm = summary.get("communication")
    if comm:
        n = comm.get("iterations") or 1
        lines.append(f"communication {seconds(comm['busy_s'] / n)} per step in {comm['launches']} collectives: "
                     f"{seconds(comm['overlapped_s'] / n)} overlapped with other work, "
                     f"{seconds(comm['exposed_s'] / n)} exposed (nothing else running)")
    return lines


def distributed_renderables(distributed: dict[str, Any]) -> list[Any]:
    """What `show` prints for a rank set, before the merged kernel table."""
    parts: list[Any] = [ranks_table(distributed)]
    lines = straggler_lines(distributed)
    if lines:
        parts.append(Text("\n".join(lines)))
    groups = collectives_table(distributed)
    if groups is not None:
        parts.append(groups)
    return parts
