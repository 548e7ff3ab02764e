"""The kernel table as a rich renderable, CSV or JSON. Renders; never prints."""

from __future__ import annotations

import json
import math
from typing import Any

import pandas as pd
from rich.console import Group
from rich.table import Table
from rich.text import Text

from rooflinectl.ceilings.model import Ceilings
from rooflinectl.outputs.clocks_text import clock_lines
from rooflinectl.outputs.plot_names import shorten_kernel_name
from rooflinectl.outputs.profile_checks import consistency_notes
from rooflinectl.outputs.steady_text import iteration_lines, setup_lines
from rooflinectl.profile_model import ProfileData, iterations_of
from rooflinectl.units import percent, seconds, si

BOUND_STYLE = {"memory": "cyan", "compute": "magenta", "latency": "yellow", "unknown": "red"}


def _calls_text(calls: float) -> str:
    return str(int(calls)) if float(calls).is_integer() else f"{calls:.3g}"


def kernel_table(table: pd.DataFrame, *, title: str = "", top: int = 15, iterations: float = 1.0) -> Table:
    """Top kernels by time: the columns the README explains, one row per group. With several
    iterations, calls, time, FLOPs and bytes are shown per iteration (`/it`); rates, shares and
    efficiencies do not change."""
    grid = Table(title=title or None, title_justify="left", show_lines=False, pad_edge=False, header_style="bold")
    per = "/it" if iterations > 1 else ""
    for name, justify in [("share", "right"), ("calls" + per, "right"), ("time" + per, "right"), ("FLOPs" + per, "right"),
                          ("bytes" + per, "right"), ("AI", "right"), ("FLOP/s", "right"), ("B/s", "right"),
                          ("attainable", "right"), ("eff", "right"), ("bound", "left"), ("prec", "left"),
                          ("kernel", "left"), ("op · shapes", "left")]:
        grid.add_column(name, justify=justify, no_wrap=name not in ("kernel", "op · shapes"), overflow="fold")
    n = max(float(iterations), 1.0)
    for row in (table if top == 0 else table.head(top)).itertuples(index=False):
        eff = "-" if math.isnan(row.efficiency) else percent(row.efficiency)
        if row.above_roof:
            eff = f"[bold red]{eff}![/]"
        kernel = shorten_kernel_name(row.kernel, max_chars=48)
        grid.add_row(
            percent(row.time_share), _calls_text(row.calls / n), seconds(row.time_s / n), si(row.flops / n, "FLOP"),
            si(row.bytes / n, "B"),
            "-" if row.cost_source == "none" else f"{row.intensity:.3g}", si(row.achieved_flops_per_s, "FLOP/s"),
            si(row.achieved_bytes_per_s, "B/s"), si(row.attainable_flops_per_s, "FLOP/s"), eff,
            f"[{BOUND_STYLE.get(row.bound, 'white')}]{row.bound}[/]",
            f"{row.precision}{'·tc' if row.unit == 'tensor' else ''}", kernel,
            " · ".join(p for p in (row.op if row.op != row.kernel else "", row.shapes) if p),
        )
    return grid


def _host_link_text(c: Ceilings) -> str:
    """The host-link roofs host transfers are held against, when the ceilings have them."""
    links = [(name, c.memory_bytes_per_s.get(level)) for name, level in
             (("pinned", "host_pinned"), ("pageable", "host_pageable"), ("peer", "peer"))]
    shown = [f"{name} {si(r.value, 'B/s')} ({r.source})" for name, r in links if r is not None]
    return f"; host link {', '.join(shown)}" if shown else ""


def summary_text(data: ProfileData) -> Text:
    """One line per whole-run figure: device, roofs used, known-cost share, idle time."""
    s, m, c = data.summary, data.metadata, data.ceilings
    dram = c.memory_bytes_per_s.get("dram")
    lines = [
        f"device: {m.get('device_name', c.device_name)} ({m.get('device_kind', c.device_kind)})"
        + ("" if m.get("completed", True) else "   [run did not complete: partial profile]"),
        f"roofs: DRAM {si(dram.value, 'B/s') if dram else '-'} ({dram.source if dram else '-'}); "
        + ", ".join(f"{k} {si(r.value, 'FLOP/s')} ({r.source})" for k, r in sorted(c.compute_flops_per_s.items()))
        + _host_link_text(c),
        *iteration_lines(s),
        f"window {seconds(s.get('window_s') or 0.0)}: device busy {seconds(s.get('device_busy_s') or 0.0)},"
        f" idle {seconds(s.get('device_idle_s') or 0.0)}"
        + (f"; regions: {', '.join(s['regions'])}" if s.get("regions") else ""),
        *setup_lines(s),
    ]
    lines += clock_lines(s.get("clocks"))
    if s.get("compile_work_s"):
        lines.append(f"torch.compile ran {seconds(s['compile_work_s'])} of work while compiling and autotuning: not counted")
    lines += [f"note: {note}" for note in consistency_notes(s)]
    sources = {r.source for r in [*c.memory_bytes_per_s.values(), *c.compute_flops_per_s.values()]}
    if "estimate" in sources:
        lines.append("some roofs are estimates: `rooflinectl ceilings --measure` measures them once for this machine")
    above = int(data.kernels["above_roof"].sum()) if len(data.kernels) else 0
    if above:
        lines.append(f"{above} row(s) above their roof (marked !): counts or ceilings are wrong there"
                     + (" (on a CPU, data served from cache also beats the DRAM roof)" if c.device_kind == "cpu" else ""))
    return Text("\n".join(lines))


def render_profile(data: ProfileData, table: pd.DataFrame, *, top: int, include_setup: bool = False) -> Group:
    """The summary and the table; with include_setup, the table of the work outside the steady state too."""
    parts: list[Any] = [summary_text(data), kernel_table(table, top=top, iterations=iterations_of(data))]
    if include_setup:
        setup = data.setup_kernels
        if setup is None or setup.empty:
            parts.append(Text("setup: nothing outside the counted work"))
        else:
            parts.append(kernel_table(setup, top=top, title="setup (outside the steady state; share of setup time)"))
    return Group(*parts)


def unknown_table(rows: pd.DataFrame, *, top: int) -> Group:
    """`show --unknown`: the ops and kernels without a cost, the time they hold and why."""
    share = float(rows["time_share"].sum()) if len(rows) else 0.0
    if rows.empty:
        return Group(Text("unknown cost: none: every kernel in the profile has a cost"))
    head = Text(f"unknown cost: {percent(share)} of kernel time in {len(rows)} group(s)"
                + ("" if len(rows) <= top else f"; the top {top} below"))
    grid = Table(show_lines=False, pad_edge=False, header_style="bold")
    for name, justify in [("share", "right"), ("calls", "right"), ("time", "right"), ("op", "left"),
                          ("kernel", "left"), ("why", "left")]:
        grid.add_column(name, justify=justify, no_wrap=name in ("share", "calls", "time"), overflow="fold")
    for row in rows.head(top).itertuples(index=False):
        grid.add_row(percent(row.time_share), str(row.calls), seconds(row.time_s), Text(str(row.op)),
                     Text(shorten_kernel_name(str(row.kernel), max_chars=48)), Text(str(row.why)))
    return Group(head, grid)


def _records(table: pd.DataFrame) -> list[dict[str, Any]]:
    records = table.to_dict(orient="records")
    for r in records:
        for k, v in r.items():
            if isinstance(v, float) and not math.isfinite(v):
                r[k] = None
    return records


def table_csv(table: pd.DataFrame) -> str:
    return table.to_csv(index=False)


def table_json(table: pd.DataFrame, data: ProfileData) -> str:
    summary = {k: v for k, v in data.summary.items() if k != "launch_sequence"}
    return json.dumps({"summary": summary, "kernels": _records(table)}, indent=1, allow_nan=False)
