"""The report's data: a profile (and the advice, diff and match computed on it) as plain JSON values.

Renders only: every figure is the profile's or the analysis' own, formatted by the functions
`show` uses (outputs/table.py), so the report's table reads as `show` does. Strings from the
profile travel as data; report.js puts them into the page as text (report_html.py).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from rich.table import Table
from rich.text import Text

from rooflinectl.analysis.advice.engine import AdviceReport
from rooflinectl.analysis.charts import ClockStrip
from rooflinectl.analysis.diff import DiffReport
from rooflinectl.analysis.json_values import json_ready
from rooflinectl.analysis.matching import GroupMatch
from rooflinectl.outputs.advice_render import measured_text
from rooflinectl.outputs.diff import movement
from rooflinectl.outputs.plot_roofs import place_groups, roof_lines
from rooflinectl.outputs.ranks_text import collectives_table, ranks_table, straggler_lines
from rooflinectl.outputs.source_text import location_text
from rooflinectl.outputs.table import (
    NUMBER_COLUMNS,
    PER_ITERATION,
    SPREAD,
    number_cells,
    summary_text,
)
from rooflinectl.profile_model import ProfileData, iterations_of
from rooflinectl.units import seconds

# Raw values each row carries: what the chart places, the hover shows, and the table sorts by.
RAW_COLUMNS = ("kernel", "op", "module", "source", "shapes", "op_family", "precision", "unit", "bound", "cost_source",
               "calls", "time_s", "flops", "bytes", "intensity", "efficiency", "time_share",
               "achieved_flops_per_s", "achieved_bytes_per_s", "attainable_flops_per_s", "above_roof")
# The table's sort key per `show` column (names sort as text)
SORT_KEYS = {"share": "time_share", "calls": "calls", "time": "time_s", SPREAD: "time_max_s", "FLOPs": "flops",
             "bytes": "bytes", "AI": "intensity", "FLOP/s": "achieved_flops_per_s", "B/s": "achieved_bytes_per_s",
             "attainable": "attainable_flops_per_s", "eff": "efficiency", "bound": "bound", "prec": "precision"}


def _cell_text(cell: Text | str) -> str:
    return cell.plain if isinstance(cell, Text) else str(cell)


def table_columns(kernels: pd.DataFrame, iterations: float) -> list[dict[str, str]]:
    """The `show` columns (number columns, then kernel and op · shapes), with their sort keys."""
    per = "/it" if iterations > 1 else ""
    names = list(NUMBER_COLUMNS)
    if "time_max_s" in kernels.columns:
        at = names.index("time") + 1
        names[at:at] = [SPREAD]
    columns = [{"name": c + per if c in PER_ITERATION else c, "key": SORT_KEYS[c]} for c in names]
    return columns + [{"name": "kernel", "key": "kernel"}, {"name": "op · shapes", "key": "op"}]


def kernel_rows(kernels: pd.DataFrame, iterations: float) -> dict[str, Any]:
    """Columnar rows: the raw values, the chart position (x FLOP/byte, y FLOP/s, where) and the
    table's cells as `show` formats them (per iteration when the profile has several)."""
    table = kernels.reset_index(drop=True)
    points = place_groups(table)
    raw = {c: table[c].tolist() if c in table.columns else [""] * len(table) for c in RAW_COLUMNS}
    if "time_max_s" in table.columns:
        raw["time_max_s"] = table["time_max_s"].tolist()
    cells = []
    for row in table.itertuples(index=False):
        by_name = {k: _cell_text(v) for k, v in number_cells(row, iterations).items()}
        shown = [by_name[c] for c in NUMBER_COLUMNS[:NUMBER_COLUMNS.index("time") + 1]]
        shown += [by_name[SPREAD]] if SPREAD in by_name else []
        shown += [by_name[c] for c in NUMBER_COLUMNS[NUMBER_COLUMNS.index("time") + 1:]]
        detail = " · ".join(p for p in (row.op if row.op != row.kernel else "", row.shapes) if p)
        cells.append([*shown, str(row.kernel), detail])
    return {
        **{c: [_plain_value(v) for v in values] for c, values in raw.items()},
        "x": points["x"].tolist(), "y": points["y"].tolist(), "where": points["where"].tolist(),
        "bytes_per_s": points["bytes_per_s"].tolist(), "cells": cells,
    }


def _plain_value(value: Any) -> Any:
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    return value


def profile_view(data: ProfileData, name: str, clocks: ClockStrip | str) -> dict[str, Any]:
    """One profile as the page shows it: summary lines, roofs, rows, table columns; clocks: its
    NVML samples or why there are none (analysis/charts.clock_strip_or_why)."""
    iterations = iterations_of(data)
    shifts = (data.summary.get("clocks") or {}).get("roof_shifts")
    roofs = [{"key": r.key, "kind": r.kind, "value": r.value, "source": r.source, "label": r.label}
             for r in roof_lines(data.ceilings, data.kernels, shifts)]
    distributed = data.summary.get("distributed")
    return {
        "name": name,
        "device": str(data.ceilings.device_name or data.metadata.get("device_name") or ""),
        "command": _command(data.metadata.get("command")),
        "summary": summary_text(data).plain.splitlines(),
        "iterations": iterations,
        "total_kernel_time_s": float(data.kernels["time_s"].sum()) if len(data.kernels) else 0.0,
        "roofs": roofs,
        "columns": table_columns(data.kernels, iterations),
        "rows": kernel_rows(data.kernels, iterations),
        "clocks": clock_view(clocks),
        "ranks": rank_view(distributed) if distributed else None,
    }


def _command(command: object) -> str:
    return " ".join(str(a) for a in command) if isinstance(command, (list, tuple)) else str(command or "")


def advice_view(report: AdviceReport) -> dict[str, Any]:
    """The findings in rank order, each with the rows (kernel groups) it is about."""
    findings = [{"rule": f.rule_id, "title": f.title, "severity": f.severity, "subject": f.subject,
                 "evidence": f.evidence, "fix": f.recommendation, "saving": seconds(f.est_saving_s, decimals=2),
                 "measured": measured_text(f) if f.verification is not None else "", "rows": list(f.rows),
                 "docs": f.docs, "source": location_text(f)} for f in report.findings]
    notes = [f"{count} more {rule} finding(s) not shown" for rule, count in sorted(report.omitted.items())]
    return {"headline": _advice_headline(report), "findings": findings, "notes": notes}


def _advice_headline(report: AdviceReport) -> str:
    """What `advise` says first, less its exit-code verdict (a page has none)."""
    share = f" ({report.total_saving_s / report.run_time_s:.1%})" if report.run_time_s > 0 else ""
    warning = f"INCOMPLETE PROFILE: {report.incomplete}. " if report.incomplete else ""
    return (f"{warning}{len(report.findings)} finding(s); estimated saving {seconds(report.total_saving_s, decimals=2)} "
            f"of {seconds(report.run_time_s, decimals=2)}{share}, Amdahl-capped"
            + (f"; {report.hidden} small one(s) left out" if report.hidden else "") + ".")


def clock_view(strip: ClockStrip | str) -> dict[str, Any]:
    """The NVML samples over the run (SM clock, power, capped, idle), or why there are none
    (analysis/charts.clock_strip_or_why)."""
    if isinstance(strip, str):
        return {"why": strip}
    samples = strip.samples
    return {
        "t_s": strip.t_s.tolist(), "sm_clock_mhz": samples.sm_clock_mhz.tolist(),
        "power_w": samples.power_w.tolist(), "capped": strip.capped.tolist(),
        "idle": (~strip.busy).tolist(), "reasons": strip.reason_names,
        "counted_s": [0.0, strip.counted_end_s], "period_s": samples.period_s,
        "power_limit_w": samples.device.get("power_limit_w"),
        "max_sm_clock_mhz": samples.device.get("max_sm_clock_mhz"),
    }


def rich_table_view(table: Table) -> dict[str, Any]:
    """A rich Table (the one `show` prints) as title, header and rows of plain text."""
    header = [_cell_text(c.header) for c in table.columns]
    columns = [[_cell_text(cell) for cell in c.cells] for c in table.columns]
    rows = [list(r) for r in zip(*columns)] if columns else []
    title = _cell_text(table.title) if table.title is not None else ""
    return {"title": title, "header": header, "rows": rows}


def rank_view(distributed: dict[str, Any]) -> dict[str, Any]:
    """The rank set as `show` prints it: the ranks side by side, the straggler, the collectives."""
    collectives = collectives_table(distributed)
    return {"ranks": rich_table_view(ranks_table(distributed)), "lines": straggler_lines(distributed),
            "collectives": rich_table_view(collectives) if collectives is not None else None}


def comparison_view(diff: DiffReport, match: GroupMatch, base: ProfileData, new: ProfileData) -> dict[str, Any]:
    """The diff table and one arrow per matched pair, from where the group sat in BASE to NEW."""
    def side(name: str) -> pd.DataFrame:
        cols = {f"{c}_{name}": c for c in ("time_s", "flops", "bytes", "cost_source")}
        return place_groups(match.pairs[list(cols)].rename(columns=cols))

    b, n = side("base"), side("new")
    arrows = [{"x0": _finite(b["x"].iat[i]), "y0": _finite(b["y"].iat[i]), "x1": _finite(n["x"].iat[i]),
               "y1": _finite(n["y"].iat[i]), "rows": [int(r) for r in match.pairs["rows_new"].iat[i]],
               "speedup": _finite(float(match.pairs["time_s_base"].iat[i]) / float(match.pairs["time_s_new"].iat[i])
                                  if float(match.pairs["time_s_new"].iat[i]) > 0 else math.nan),
               "match": str(match.pairs["level"].iat[i])} for i in range(len(match.pairs))]
    changes = [[g.label, seconds(g.base_time_s), seconds(g.new_time_s),
                f"{g.delta_pct:+.1f}%" if math.isfinite(g.delta_pct) else "new", movement(g), g.match]
               for g in diff.changed]
    lonely = [[side_name, r["label"], seconds(r["time_s"])]
              for side_name, rows in (("new", diff.new), ("vanished", diff.vanished)) for r in rows]
    pct = f"{diff.total_delta_pct:+.1f}%"
    return {
        "headline": f"{diff.measure} per iteration: {seconds(diff.base_total_s)} -> {seconds(diff.new_total_s)} ({pct}); "
                    f"{len(diff.changed)} matched, {len(diff.new)} new, {len(diff.vanished)} vanished group(s)",
        "notes": list(diff.notes) + [f"incomplete: {i}" for i in diff.incomplete],
        "header": ["group", "base/it", "new/it", "change", "roofline move", "match"], "changes": changes,
        "lonely": lonely, "arrows": arrows, "base_iterations": iterations_of(base), "new_iterations": iterations_of(new),
    }


def _finite(value: Any) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None


def report_document(views: list[dict[str, Any]], advice: dict[str, Any] | None, *, mode: str, title: str,
                    tool_version: str, comparison: dict[str, Any] | None = None) -> dict[str, Any]:
    """Everything the page needs, JSON-ready (NaN and infinities as null)."""
    return json_ready({"mode": mode, "title": title, "tool_version": tool_version, "views": views,
                       "advice": advice, "comparison": comparison})
