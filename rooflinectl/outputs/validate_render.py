"""`rooflinectl validate` output: analytic against measured, as a rich table, markdown, CSV or JSON.

Renders only: the ratios and the agreement come from analysis/validate.py. Strings that came
from a trace (kernel names, shapes) are escaped for the medium (rich markup, markdown pipes).
"""

from __future__ import annotations

import json
import math
from typing import Any

import pandas as pd
from rich.console import Group
from rich.table import Table
from rich.text import Text

from rooflinectl.analysis.json_values import json_ready
from rooflinectl.outputs.escape import markdown, rich_text
from rooflinectl.outputs.plot_names import shorten_kernel_name
from rooflinectl.outputs.table import table_csv
from rooflinectl.units import percent, seconds, si


def _ratio(value: Any) -> str:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return "-"
    return "-" if math.isnan(value) else f"{value:.3g}"


def coverage_text(c: dict[str, Any]) -> str:
    """Which classes and groups the measured launches cover: 'C of K sampling classes; counters on
    R of N groups, S shared within their class' (profiles written before classes: groups only)."""
    groups = f"{c.get('rows_measured', '?')} of {c.get('rows', '?')} groups"
    if "classes" not in c:
        return groups
    shared = c.get("rows_shared", 0)
    return (f"{c.get('classes_measured', '?')} of {c['classes']} sampling classes; counters on {groups}"
            + (f", {shared} shared within their class" if shared else ""))


def warm_text(c: dict[str, Any]) -> str:
    """The warm run in a few words, for the counters line: 'warm caches: the level of 40 groups
    (12 l2)', the groups whose warm figure was beyond DRAM's peak, or why not ('' for profiles
    from before the warm run)."""
    warm = c.get("warm") or {}
    if warm.get("status") == "measured":
        beyond = c.get("rows_warm_beyond_peak", 0)
        return (f"warm caches: the level of {c.get('rows_warm', 0)} groups ({c.get('rows_cache_counters', 0)} l2)"
                + (f"; {beyond} kept the analytic level (their warm DRAM bytes beyond DRAM's peak in their time)"
                   if beyond else ""))
    if warm.get("status") == "failed":
        return f"warm caches: no level ({warm.get('reason', '')})"
    return ""


def headline(summary: dict[str, Any], agreement: dict[str, Any]) -> list[str]:
    """What was compared: counters coverage and bound agreement, one line each."""
    c = summary.get("counters") or {}
    lines = [f"counters: ncu {c.get('ncu_version', '?')}, {c.get('launches_measured', '?')} of "
             f"{c.get('launches_counted', '?')} launches measured ({coverage_text(c)}, "
             f"{percent(c.get('time_share_measured'))} of kernel time); "
             "DRAM bytes: reads cold-cache (ncu flushes caches before each replay), writes include what the kernel "
             "left in L2"]
    lines.append(f"compared: {percent(agreement.get('compared_time_share'))} of kernel time; bound (memory/compute) "
                 f"agrees on {percent(agreement.get('agree_time_share'))} of the time both classify "
                 f"({percent(agreement.get('classified_time_share'))} of kernel time; the rest is latency-bound)")
    lines.append(level_line(summary, agreement))
    lines.append("ratios are analytic / measured: 1 = exact; under 1 the model counts less than the hardware did")
    return lines


def level_line(summary: dict[str, Any], agreement: dict[str, Any]) -> str:
    """The memory level: how many groups the warm counters decided, and how often the analytic
    guess agreed (or why there are no warm counters)."""
    warm = (summary.get("counters") or {}).get("warm") or {}
    if not agreement.get("level_groups"):
        why = {"off": "the warm run was skipped (--no-ncu-warm)", "failed": f"the warm run failed: {warm.get('reason', '')}",
               "measured": "the warm run decided no memory-bound group (without an L2 roof, from `rooflinectl ceilings "
                           "--measure`, every group stays on DRAM)"}
        return ("memory level: analytic guess only; " + why.get(warm.get("status", ""), "no warm-cache counters in this "
                "profile (profile again with --counters ncu)")).rstrip(": ")
    return (f"memory level (warm caches: the binding term of bytes at the L2 roof, warm DRAM bytes at DRAM's): counters decide "
            f"{agreement['level_groups']} memory-bound groups, {percent(agreement.get('level_compared_time_share'))} "
            f"of memory-bound time; the analytic guess agrees on {percent(agreement.get('level_agree_time_share'))} of "
            f"it; cache-served: {agreement.get('cache_groups_counters', 0)} groups by counters, "
            f"{agreement.get('cache_groups_analytic', 0)} by the analytic guess")


def level_text(row: Any) -> str:
    """'l2 → dram' (analytic → counters) where the warm counters decided, else the level and '(analytic)'."""
    if getattr(row, "memory_level_source", "") != "counters":
        return f"{getattr(row, 'memory_level', '') or 'dram'} (analytic)"
    return f"{row.memory_level_analytic} → {row.memory_level}"


def family_table(families: pd.DataFrame) -> Table:
    grid = Table(title="By op family", title_justify="left", header_style="bold", pad_edge=False)
    for name in ("family", "groups", "time", "FLOPs", "measured", "ratio", "bytes", "DRAM", "ratio ", "bound agrees"):
        grid.add_column(name, justify="left" if name == "family" else "right")
    for r in families.itertuples(index=False):
        grid.add_row(rich_text(r.op_family), str(r.groups), seconds(r.time_s), si(r.flops, "FLOP"),
                     si(r.measured_flops, "FLOP"), _ratio(r.flops_ratio), si(r.bytes, "B"), si(r.dram_bytes, "B"),
                     _ratio(r.bytes_ratio), percent(r.agree_time_share))
    return grid


def kernel_rows_table(rows: pd.DataFrame, top: int) -> Table:
    grid = Table(title="By kernel group (largest time first)", title_justify="left", header_style="bold",
                 pad_edge=False)
    left = ("kernel", "op · shapes", "roof → ran on", "bound → measured", "level → counters")
    for name in ("share", "FLOPs", "measured", "ratio", "bytes", "DRAM", "ratio ", "DRAM warm", "DRAM model", "L2", "L1",
                 "roof → ran on", "bound → measured", "level → counters", "kernel", "op · shapes"):
        grid.add_column(name, justify="left" if name in left else "right", overflow="fold")
    for r in rows.head(top).itertuples(index=False):
        bound = Text(f"{r.bound} → {r.measured_bound}")
        if r.agree is False:
            bound.append(" ✗", style="red")
        level = Text(level_text(r))
        if r.level_agree is False:
            level.append(" ✗", style="red")
        grid.add_row(percent(r.time_share), si(r.flops, "FLOP"), si(r.measured_flops, "FLOP"), _ratio(r.flops_ratio),
                     si(r.bytes, "B"), si(r.dram_bytes, "B"), _ratio(r.bytes_ratio), si(r.dram_bytes_warm, "B"),
                     si(r.dram_bytes_modelled, "B"), si(r.l2_bytes, "B"), si(r.l1_bytes, "B"),
                     rich_text(f"{r.analytic_roof} → {r.measured_precision or 'no FLOPs'}"), bound, level,
                     rich_text(shorten_kernel_name(str(r.kernel), 40)), rich_text(f"{r.op} · {r.shapes}"))
    if top < len(rows):  # nothing left out without saying so
        grid.caption = f"{top} of {len(rows)} groups shown (--all shows every one)"
        grid.caption_justify = "left"
    return grid


def render_validate(summary: dict[str, Any], rows: pd.DataFrame, families: pd.DataFrame,
                    agreement: dict[str, Any], top: int) -> Group:
    return Group(Text("\n".join(headline(summary, agreement))), family_table(families), kernel_rows_table(rows, top))


def validate_markdown(summary: dict[str, Any], rows: pd.DataFrame, families: pd.DataFrame,
                      agreement: dict[str, Any], top: int) -> str:
    out = ["## rooflinectl validate: analytic against measured", ""]
    out += [f"- {line}" for line in headline(summary, agreement)] + [""]
    out += ["| family | groups | time | FLOPs | measured | ratio | bytes | DRAM bytes | ratio | bound agrees |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in families.itertuples(index=False):
        out.append(f"| {markdown(r.op_family)} | {r.groups} | {seconds(r.time_s)} | {si(r.flops, 'FLOP')} | "
                   f"{si(r.measured_flops, 'FLOP')} | {_ratio(r.flops_ratio)} | {si(r.bytes, 'B')} | "
                   f"{si(r.dram_bytes, 'B')} | {_ratio(r.bytes_ratio)} | {percent(r.agree_time_share)} |")
    out += ["", "| share | op · shapes | kernel | FLOPs ratio | bytes ratio | L2 / DRAM | warm / cold DRAM | "
            "modelled / warm DRAM | bound → measured | level → counters |", "|---:|---|---|---:|---:|---:|---:|---:|---|---|"]
    for r in rows.head(top).itertuples(index=False):
        l2 = r.l2_bytes / r.dram_bytes if r.dram_bytes and r.dram_bytes > 0 else math.nan
        warm = r.dram_bytes_warm / r.dram_bytes if r.dram_bytes and r.dram_bytes > 0 else math.nan
        modelled = r.dram_bytes_modelled / r.dram_bytes_warm if r.dram_bytes_warm and r.dram_bytes_warm > 0 else math.nan
        out.append(f"| {percent(r.time_share)} | {markdown(r.op)} · {markdown(r.shapes)} | "
                   f"{markdown(shorten_kernel_name(str(r.kernel), 48))} | "
                   f"{_ratio(r.flops_ratio)} | {_ratio(r.bytes_ratio)} | {_ratio(l2)} | {_ratio(warm)} | {_ratio(modelled)} | "
                   f"{r.bound} → {r.measured_bound} | {level_text(r)}{' ✗' if r.level_agree is False else ''} |")
    return "\n".join(out) + "\n"


def validate_json(summary: dict[str, Any], rows: pd.DataFrame, families: pd.DataFrame, agreement: dict[str, Any]) -> str:
    counters = {k: v for k, v in (summary.get("counters") or {}).items() if k != "command"}
    return json.dumps(json_ready({"counters": counters, "agreement": agreement,
                                   "families": families.to_dict(orient="records"),
                                   "kernels": rows.to_dict(orient="records")}), indent=1, allow_nan=False, default=str)


def validate_csv(rows: pd.DataFrame) -> str:
    """`validate --format csv`: every row, every column."""
    return table_csv(rows)
