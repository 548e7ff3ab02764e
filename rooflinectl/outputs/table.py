"""The kernel table as a rich renderable, CSV or JSON. Renders; never prints."""

from __future__ import annotations

import json
import math
import re
from typing import Any

import pandas as pd
from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from rooflinectl.analysis.json_values import json_ready
from rooflinectl.ceilings.model import Ceilings
from rooflinectl.outputs.clocks_text import clock_lines
from rooflinectl.outputs.escape import csv_cell, plain, rich_text
from rooflinectl.outputs.plot_names import ellipsize, shorten_kernel_name
from rooflinectl.outputs.profile_checks import consistency_notes
from rooflinectl.outputs.ranks_text import communication_lines, distributed_renderables
from rooflinectl.outputs.steady_text import iteration_lines, setup_lines, unprofiled_lines
from rooflinectl.profile_model import ProfileData, iterations_of
from rooflinectl.units import percent, seconds, si

BOUND_STYLE = {"memory": "cyan", "compute": "magenta", "latency": "yellow", "unknown": "red"}

# The numeric columns, left to right, and the order they give way in when the terminal is narrow
# (first listed, first dropped); share, time, eff and bound always stay, and so do the names.
PER_ITERATION = ("calls", "time", "ranks", "FLOPs", "bytes")  # shown per iteration when the profile has several
NUMBER_COLUMNS = ("share", "calls", "time", "FLOPs", "bytes", "AI", "FLOP/s", "B/s", "attainable", "eff", "bound",
                  "prec")
DROP_ORDER = ("B/s", "FLOPs", "bytes", "calls", "FLOP/s", "AI", "attainable", "prec", "ranks")
SPREAD = "ranks"  # a table merged across ranks: the fastest and slowest rank's time, after "time"
# The two name columns of each view: what the row is, and what it holds
NAME_COLUMNS = {"kernel": ("kernel", "op · shapes"), "op": ("op", "shapes"), "module": ("module", "ops"),
                "line": ("source line", "function · ops")}
NO_SOURCE_TEXT = "(no source line)"
MIN_NAME_WIDTH = (24, 26)
_MIN_TEXT = 12  # the narrowest a text column gets, however narrow the terminal
_PADDING = 2  # the box's divider and one space of padding between two columns

def _calls_text(calls: float) -> str:
    return str(int(calls)) if float(calls).is_integer() else f"{calls:.3g}"



def number_cells(row: Any, n: float) -> dict[str, Text | str]:
    """A row's number cells; calls, time, FLOPs and bytes per iteration when n > 1 (and the
    fastest-slowest rank of a table merged across ranks)."""
    eff = "-" if math.isnan(row.efficiency) else percent(row.efficiency)
    if eff != "-" and math.isnan(row.flops) and not math.isnan(row.bytes):
        eff = f">={eff}"  # bytes a minimum, FLOPs unknown: the efficiency is a lower bound
    spread = ({SPREAD: f"{seconds(row.time_min_s / n)}-{seconds(row.time_max_s / n)} r{row.slowest_rank}"}
              if hasattr(row, "time_max_s") else {})
    return {**spread,
        "share": percent(row.time_share), "calls": _calls_text(row.calls / n), "time": seconds(row.time_s / n),
        "FLOPs": si(row.flops / n, "FLOP"), "bytes": si(row.bytes / n, "B"),
        "AI": "-" if row.cost_source == "none" or math.isnan(row.intensity) else f"{row.intensity:.3g}",
        "FLOP/s": si(row.achieved_flops_per_s, "FLOP/s"), "B/s": si(row.achieved_bytes_per_s, "B/s"),
        "attainable": si(row.attainable_flops_per_s, "FLOP/s"),
        "eff": Text(f"{eff}!", style="bold red") if row.above_roof else eff,
        "bound": rich_text(row.bound + (f"·{getattr(row, 'memory_level', '')}" if row.bound == "memory"
                                        and getattr(row, "memory_level", "") in ("l2", "cache") else ""),
                           style=BOUND_STYLE.get(row.bound, "white")),
        "prec": rich_text(f"{row.precision}{'·tc' if row.unit == 'tensor' else ''}"),
    }


def ellipsize_left(text: str, max_chars: int) -> str:
    """Cut from the left: the end of a module path is its most specific part."""
    return text if len(text) <= max_chars else "…" + text[len(text) - max(1, max_chars - 1):]


_SPACE_IN_SHAPE = re.compile(r"(?<=,) +(?=[^\[\]]*\])")


def shapes_unbroken(text: str, max_chars: int) -> str:
    """Shapes that do not fit drop the spaces after their commas (`[64,768] x [768,50257]`), so a
    if by == "line":
        detail = " · ".join(p for p in (str(getattr(row, "source_function", "")), str(row.op)) if p)
        return ellipsize_left(str(row.source) or NO_SOURCE_TEXT, widths[0]), detail
    narrow column wraps between shapes, never inside one."""
    return text if len(text) <= max_chars else _SPACE_IN_SHAPE.sub("", text)


def _name_cells(row: Any, by: str, widths: tuple[int, int]) -> tuple[str, str]:
    """The two name cells, abbreviated to fit (kernel names by the rules of plot_names)."""
    if by == "module":
        return ellipsize_left(str(row.module) or "(no module)", widths[0]), str(row.op)
    if by == "op":
        return ellipsize(str(row.op), widths[0]), shapes_unbroken(str(row.shapes), widths[1])
    op = ellipsize(str(row.op), widths[1]) if row.op != row.kernel else ""  # a name is cut with "…", never folded
    detail = " · ".join(p for p in (op, row.shapes) if p)
    return shorten_kernel_name(str(row.kernel), max_chars=widths[0]), shapes_unbroken(detail, widths[1])


def fit_columns(widths: dict[str, int], names: tuple[int, int], width: int | None,
                columns: tuple[str, ...] = NUMBER_COLUMNS, drop_order: tuple[str, ...] = DROP_ORDER,
                min_names: tuple[int, int] = MIN_NAME_WIDTH) -> tuple[list[str], tuple[int, int]]:
    """Which of the short columns to show and how wide the two text columns may be, for a terminal
    of `width` characters (None: no limit): short columns give way in drop_order until the text
    columns have min_names (or their natural widths, `names`); the rest goes to the text.
    Every table printed on a terminal (show, advise, ceilings, the reference kernels) is fitted by this."""
    shown = list(columns)
    if width is None:
        return shown, names

    def room() -> int:
        return width - sum(widths[c] + _PADDING for c in shown) - _PADDING

    for column in (c for c in drop_order if c in columns):
        if room() >= min(names[0], min_names[0]) + min(names[1], min_names[1]):
            break
        shown.remove(column)
    if room() < sum(min_names):  # nothing more gives way: the text columns share what is left, as rich would
        left = max(room(), 2 * _MIN_TEXT)
        # a first column the caller keeps whole (min_names[0] >= its natural width, as advise's rule
        # ids) stays whole; otherwise the shapes in the second need more room
        whole = min_names[0] >= names[0]
        first = min(names[0], left - _MIN_TEXT) if whole else max(_MIN_TEXT, min(names[0], min_names[0], int(left * 0.45)))
        return shown, (first, left - first)
    left = room()
    first = min(names[0], max(min_names[0], left - min(names[1], max(min_names[1], left // 2))))
    return shown, (first, max(min_names[1], left - first))


def kernel_table(table: pd.DataFrame, *, title: str = "", top: int = 15, by: str = "kernel",
                 width: int | None = None, iterations: float = 1.0) -> Table:
    """Top rows by time with the columns the README explains, fitted to `width` characters:
    number columns give way in DROP_ORDER, names are abbreviated, then wrapped (None: all).
    With several iterations, calls, time, FLOPs and bytes are per iteration (`/it`); rates,
    shares and efficiencies do not change."""
    n = max(float(iterations), 1.0)
    per = "/it" if n > 1 else ""
    columns = NUMBER_COLUMNS
    if "time_max_s" in table.columns:  # merged across ranks: the spread after the time
        at = NUMBER_COLUMNS.index("time") + 1
        columns = (*NUMBER_COLUMNS[:at], SPREAD, *NUMBER_COLUMNS[at:])
    header = {c: c + per if c in PER_ITERATION else c for c in columns}
    rows = list((table if top == 0 else table.head(top)).itertuples(index=False))
    numbers = [number_cells(r, n) for r in rows]
    widths = {c: max([len(header[c])] + [n[c].cell_len if isinstance(n[c], Text) else len(n[c]) for n in numbers])
              for c in columns}
    full = [_name_cells(r, by, (48, 10_000)) for r in rows]
    headers = NAME_COLUMNS[by]
    natural = (max([len(headers[0])] + [len(a) for a, _ in full]), max([len(headers[1])] + [len(b) for _, b in full]))
    shown, name_widths = fit_columns(widths, natural, width, columns)
    grid = Table(title=title or None, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
                 padding=(0, 1, 0, 0), header_style="bold")
    for c in shown:
        grid.add_column(header[c], justify="left" if c in ("bound", "prec") else "right", no_wrap=True)
    grid.add_column(headers[0], no_wrap=True, max_width=name_widths[0])
    grid.add_column(headers[1], overflow="fold", max_width=name_widths[1])
    # the user's line as a last column where nothing is cut (--wide) and a row has one
    source = width is None and by != "line" and any(str(getattr(r, "source", "")) for r in rows)
    if source:
        grid.add_column("source", no_wrap=True)
    for row, cells in zip(rows, numbers):
        first, second = _name_cells(row, by, (name_widths[0], name_widths[1]))
        extra = [rich_text(str(row.source) or "-")] if source else []
        grid.add_row(*[cells[c] for c in shown], rich_text(first), rich_text(second), *extra)
    if len(rows) < len(table):  # nothing left out without saying so, and how to see it
        rest = table.iloc[len(rows):]
        share = percent(float(rest["time_share"].sum())) if "time_share" in rest.columns else "-"
        grid.caption = f"{len(rows)} of {len(table)} groups shown; {len(rest)} more hold {share} of the time (--all)"
        grid.caption_justify = "left"
    return grid


def _roofs_line(data: ProfileData) -> str:
    """DRAM and the compute roofs the rows are held against (the rest: `rooflinectl ceilings`)."""
    c = data.ceilings
    dram = c.memory_bytes_per_s.get("dram")
    used = {c.compute_roof_key(u, p) for u, p in zip(data.kernels.get("unit", []), data.kernels.get("precision", []))}
    keys = sorted(k for k in c.compute_flops_per_s if k in used) or sorted(c.compute_flops_per_s)
    rest = len(c.compute_flops_per_s) - len(keys)
    compute = ", ".join(f"{plain(k)} {si(c.compute_flops_per_s[k].value, 'FLOP/s')} "
                        f"({plain(c.compute_flops_per_s[k].source)})" for k in keys) or "no compute roofs (unknown GPU)"
    return (f"roofs: DRAM {si(dram.value, 'B/s') if dram else '-'} ({plain(dram.source) if dram else '-'}); "
            + compute
            + (f"; {rest} more in `rooflinectl ceilings`" if rest else "") + _host_link_text(c)
            + (f"; link {si(c.link().value, 'B/s')} ({plain(c.link().source)})" if c.link() is not None else ""))


def _host_link_text(c: Ceilings) -> str:
    """The host-link roofs host transfers are held against, when the ceilings have them."""
    links = [(name, c.memory_bytes_per_s.get(level)) for name, level in
             (("pinned", "host_pinned"), ("pageable", "host_pageable"), ("peer", "peer"))]
    shown = [f"{name} {si(r.value, 'B/s')} ({r.source})" for name, r in links if r is not None]
    return f"; host link {', '.join(shown)}" if shown else ""


def summary_text(data: ProfileData) -> Text:
    """One line per whole-run figure: device, roofs used, known-cost share, idle time."""
    s, m, c = data.summary, data.metadata, data.ceilings  # their strings are escaped (plain) below
    lines = [
        f"device: {plain(m.get('device_name', c.device_name))} ({plain(m.get('device_kind', c.device_kind))})"
        + ("" if m.get("completed", True) else "   [run did not complete: partial profile]"),
        _roofs_line(data),
        *iteration_lines(s),
        *(plain(line) for line in unprofiled_lines(s)),
        f"window {seconds(s.get('window_s') or 0.0)}: device busy {seconds(s.get('device_busy_s') or 0.0)},"
        f" idle {seconds(s.get('device_idle_s') or 0.0)}"
        + (f"; regions: {', '.join(plain(r) for r in s['regions'])}" if s.get("regions") else ""),
        *(plain(line) for line in setup_lines(s)),
    ]
    lines += [plain(line) for line in clock_lines(s.get("clocks"))]
    lines += [plain(line) for line in communication_lines(s, m)]
    if s.get("compile_work_s"):
        lines.append(f"torch.compile ran {seconds(s['compile_work_s'])} of work while compiling and autotuning: not counted")
    lines += [f"note: {note}" for note in consistency_notes(s)]
    threads, processes = int(m.get("threads_started") or 0), int(m.get("processes_started") or 0)
    if threads or processes:
        started = " and ".join(p for p in (f"{threads} thread(s)" if threads else "",
                                           f"{processes} child process(es)" if processes else "") if p)
        lines.append(f"not counted: the run started {started} that the profiler does not follow "
                     "(it records the main thread and autograd's)")
    sources = {r.source for r in [*c.memory_bytes_per_s.values(), *c.compute_flops_per_s.values()]}
    if "estimate" in sources and m.get("source_file"):  # `analyse`: the GPU need not be here to measure
        lines.append(f"some roofs are estimates: the profile comes from {m['source_file']}, analysed where its GPU "
                     "was not measured")
    elif "estimate" in sources:
        lines.append("some roofs are estimates: `rooflinectl ceilings --measure` measures them once for this machine")
    cached = data.summary.get("cache_time_share")
    if isinstance(cached, (int, float)) and cached > 0:
        level = "L2" if c.device_kind == "cuda" else "last-level cache"
        lines.append(f"{percent(cached)} of kernel time is cache-resident, held to the {level} roof "
                     "(memory_level: its inputs were still cached, by the reuse distance of the tensors it read)")
    lines += [plain(line) for line in source_lines_note(m)]
    above = int(data.kernels["above_roof"].sum()) if len(data.kernels) else 0
    if above:
        lines.append(f"{above} row(s) above their roof (marked !): a count is wrong there (`advise` names it); "
                     "left out of efficiency aggregates and gates")
        stale = stale_roofs_line(c)
        if stale:
            lines.append(stale)
    return Text("\n".join(lines))


def stale_roofs_line(c: Ceilings) -> str | None:
    """For rows above their roof: the measured roofs come from a cache that may be stale (measured
    on a busy machine, or before a driver or clock change). None when no roof is measured."""
    measured = [r for r in [*c.memory_bytes_per_s.values(), *c.compute_flops_per_s.values()] if r.source == "measured"]
    if not measured:
        return None
    from rooflinectl.ceilings.conditions import busy_reason, conditions_text

    conditions = c.details.get("measured_conditions")
    when = c.details.get("measured_at") or "date not known"
    taken = f"{when}, {conditions_text(conditions)}" if conditions else f"{when}, load not recorded"
    busy = busy_reason(conditions or {})
    return (f"the measured roofs come from a cached measurement ({taken}{'; busy: ' + busy if busy else ''}) "
            "that may be stale: `rooflinectl ceilings --measure --refresh` measures them again")


def source_lines_note(metadata: dict[str, Any]) -> list[str]:
    """One line when the run kept no source line, or stopped keeping them, and why (nothing for a
    profile written before source lines were kept, or for a run that kept them throughout)."""
    info = metadata.get("source_lines")
    if not isinstance(info, dict) or info.get("status") == "on":
        return []
    why = str(info.get("why") or "not captured")
    return [f"source lines: {'partial' if info.get('status') == 'stopped' else 'none'}: {why}"]


def render_profile(data: ProfileData, table: pd.DataFrame, *, top: int, by: str = "kernel", width: int | None = None,
                   include_setup: bool = False) -> Group:
    """The summary and the table fitted to `width` characters (None: every column); with
    include_setup, the table of the work outside the steady state too."""
    distributed = data.summary.get("distributed")
    title = f"kernels, mean per rank over {len(distributed.get('ranks') or [])} ranks" if distributed else ""
    parts: list[Any] = [summary_text(data), *(distributed_renderables(distributed) if distributed else []),
                        kernel_table(table, top=top, by=by, width=width, iterations=iterations_of(data), title=title)]
    if include_setup:
        setup = data.setup_kernels
        if setup is None or setup.empty:
            parts.append(Text("setup: nothing outside the counted work"))
        else:
            parts.append(kernel_table(setup, top=top, by=by, width=width,
                                      title="setup (outside the steady state; share of setup time)"))
    return Group(*parts)


def unknown_table(table: pd.DataFrame, *, top: int) -> Group:
    """`show --unknown`: the ops and kernels without a cost, the time they hold and why."""
    rows = table
    share = float(rows["time_share"].sum()) if len(rows) else 0.0
    if rows.empty:
        return Group(Text("unknown cost: none: every kernel in the profile has a cost"))
    head = Text(f"unknown cost: {percent(share)} of kernel time in {len(rows)} group(s)"
                + ("" if len(rows) <= top else f"; the top {top} below"))
    grid = Table(show_lines=False, pad_edge=False, header_style="bold")
    for name, justify in [("share", "right"), ("calls", "right"), ("time", "right"), ("op", "left"),
                          ("kernel", "left"), ("why", "left")]:
        grid.add_column(name, justify=justify, no_wrap=name in ("share", "calls", "time"), overflow="fold")
    for row in (rows if top == 0 else rows.head(top)).itertuples(index=False):
        grid.add_row(percent(row.time_share), str(row.calls), seconds(row.time_s), rich_text(row.op),
                     rich_text(shorten_kernel_name(str(row.kernel), max_chars=48)), rich_text(row.why))
    return Group(head, grid)


def table_csv(table: pd.DataFrame) -> str:
    """The table as CSV, each text cell through escape.csv_cell (no formula, no control character)."""
    safe = table.copy()
    for name in safe.columns:
        if pd.api.types.is_object_dtype(safe[name]) or pd.api.types.is_string_dtype(safe[name]):
            safe[name] = safe[name].map(csv_cell)
    return safe.to_csv(index=False)


def table_json(table: pd.DataFrame, data: ProfileData) -> str:
    summary = {k: v for k, v in data.summary.items() if k != "launch_sequence"}
    return json.dumps(json_ready({"summary": summary, "kernels": table.to_dict(orient="records")}), indent=1, allow_nan=False)


def _rows_with_iterations(data: ProfileData, table: pd.DataFrame, include_setup: bool) -> pd.DataFrame:
    """The rows a file carries: totals over the profiled iterations, with the count to divide by
    (`iterations`), and the setup rows after them (phase=setup) when asked."""
    rows = table.assign(iterations=iterations_of(data))
    setup = data.setup_kernels
    if include_setup and setup is not None:
        rows = pd.concat([rows.assign(phase="steady"), setup.assign(phase="setup", iterations=1.0)],
                         ignore_index=True)
    return rows


def profile_csv(data: ProfileData, table: pd.DataFrame, include_setup: bool = False) -> str:
    """`show --format csv`: every column, totals, with an `iterations` column."""
    return table_csv(_rows_with_iterations(data, table, include_setup))


def profile_json(data: ProfileData, table: pd.DataFrame, include_setup: bool = False) -> str:
    """`show --format json`: the summary and every row, totals, each with `iterations`."""
    return table_json(_rows_with_iterations(data, table, include_setup), data) + "\n"
