"""`rooflinectl kernels` output: the lessons table (rich) and its JSON. Renders; never prints.

Input: the compared lesson table (analysis/lessons.py: one row per variant that ran) and the
lesson entries (name, concept, target, and every variant's raw result: check, autotune, error).
Strings from results (error messages) are shown as text, never as rich markup.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pandas as pd
from rich.console import Group
from rich.table import Table
from rich.text import Text

from rooflinectl.analysis.lessons import target_status
from rooflinectl.ceilings.model import Ceilings
from rooflinectl.units import percent, seconds, si

BOUND_STYLE = {"memory": "cyan", "compute": "magenta", "latency": "yellow", "unknown": "red"}
FIGURES = ["time_s", "flops", "bytes", "achieved_flops_per_s", "achieved_bytes_per_s", "intensity", "bound",
           "efficiency", "roof", "roof_value", "roof_source", "vs_library", "unit", "precision", "kernel",
           "cost_source", "cost_note", "above_roof", "own_flops", "own_bytes", "own_efficiency"]


def _figures(report: pd.DataFrame) -> dict[tuple[str, str], pd.Series]:
    return {(r["lesson"], r["variant"]): r for _, r in report.iterrows()}


def _check_text(result: dict[str, Any]) -> str:
    if result.get("error"):
        return "[red]failed[/]"
    check = result.get("check") or {}
    if not check:
        return "-"
    return "[green]ok[/]" if check.get("ok") else "[bold red]mismatch[/]"


def _roof_text(row: pd.Series) -> str:
    unit = "B/s" if row["roof"] == "dram" else "FLOP/s"
    name = "DRAM" if row["roof"] == "dram" else str(row["roof"])
    return f"{name} {si(row['roof_value'], unit)}"


def _ratio(value: float) -> str:
    return "-" if value != value else f"{value:.2f}x"


def lessons_table(report: pd.DataFrame, entries: list[dict[str, Any]]) -> Table:
    """One row per variant, grouped by lesson: time, achieved rates, roof, % of roof, vs library."""
    grid = Table(show_lines=False, pad_edge=False, header_style="bold")
    for name, justify in [("lesson", "left"), ("variant", "left"), ("time", "right"), ("FLOP/s", "right"),
                          ("B/s", "right"), ("bound", "left"), ("roof", "left"), ("% of roof", "right"),
                          ("vs library", "right"), ("check", "left")]:
        grid.add_column(name, justify=justify, no_wrap=True)
    figures = _figures(report)
    for entry in entries:
        for i, result in enumerate(entry["results"]):
            row = figures.get((entry["name"], result["variant"]))
            lesson = entry["name"] if i == 0 else ""
            variant = Text(result["variant"] + (" (library)" if result["role"] == "library" else ""))
            if row is None:
                grid.add_row(lesson, variant, "-", "-", "-", "-", "-", "-", "-", _check_text(result))
                continue
            eff = percent(row["efficiency"])
            if row["above_roof"]:
                eff = f"[bold red]{eff}![/]"
            grid.add_row(lesson, variant, seconds(row["time_s"]), si(row["achieved_flops_per_s"], "FLOP/s"),
                         si(row["achieved_bytes_per_s"], "B/s"),
                         f"[{BOUND_STYLE.get(row['bound'], 'white')}]{row['bound']}[/]", _roof_text(row), eff,
                         "-" if result["role"] == "library" else _ratio(row["vs_library"]), _check_text(result))
        grid.add_section()
    return grid


def _config_text(config: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in config.items())


def _autotune_text(tune: dict[str, Any]) -> str:
    timed = sorted(tune.get("timings_s") or [], key=lambda ct: ct[1])
    if timed:
        how = "timed: " + "; ".join(f"{_config_text(c)}: {seconds(t)}" for c, t in timed)
    elif tune.get("configs") == 1:
        how = "its only config here: the interpreter cannot time configs"
    else:
        how = "chosen earlier in this run"
    return f"autotune chose {_config_text(tune['best'])} ({how})"


def lesson_notes(report: pd.DataFrame, entries: list[dict[str, Any]], *, with_targets: bool,
                 with_verdicts: bool = True) -> list[Text]:
    """Per lesson: when not to write the kernel (with_verdicts: only where times mean something),
    autotune choices, mismatches, failures, targets."""
    figures = _figures(report)
    lines: list[Text] = []
    for entry in entries:
        name = entry["name"]
        lesson = next((r for r in entry["results"] if r["role"] == "lesson"), None)
        library = next((r for r in entry["results"] if r["role"] == "library"), None)
        row = figures.get((name, lesson["variant"])) if lesson else None
        if with_verdicts and row is not None and library is not None and row["vs_library"] == row["vs_library"]:
            ratio = float(row["vs_library"])
            if ratio < 1:
                lines.append(Text(f"{name}: the library wins: {library['variant']} is {1 / ratio:.2f}x faster "
                                  "than this kernel on these shapes: call it, do not write this kernel.",
                                  style="yellow"))
            else:
                lines.append(Text(f"{name}: this kernel runs {ratio:.2f}x the speed of {library['variant']}."))
        for result in entry["results"]:
            where = f"{name} / {result['variant']}"
            for tune in result.get("autotune") or []:
                if tune.get("best"):
                    lines.append(Text(f"{where}: {_autotune_text(tune)}"))
            if result.get("error"):
                lines.append(Text(f"{where}: failed: {result['error']}", style="red"))
            check = result.get("check") or {}
            if check and not check.get("ok"):
                lines.append(Text(f"{where}: does not match the fp32 reference within atol {check['atol']:.2g}, "
                                  f"rtol {check['rtol']:.2g}: " + "; ".join(check.get("worst") or []), style="red"))
            own = figures.get((name, result["variant"]))
            if own is not None and own["own_bytes"] == own["own_bytes"]:
                lines.append(Text(f"{where}: {_own_cost_text(own, with_verdicts)}"))
        target = entry.get("target")
        if with_targets and target and row is not None:
            value, met = target_status(target["metric"], target["threshold"], row)
            shown = percent(value) if target["metric"] == "roof" else _ratio(value)
            lines.append(Text(f"{name}: target {target['text']}: {shown}, " + ("met" if met else "NOT met"),
                              style="green" if met else "red"))
    return lines


def _own_cost_text(row: pd.Series, with_figures: bool) -> str:
    """A variant held to the op's minimum while its kernels declare more: both, and (where times
    mean something) how close its kernels run to the roof for what they move."""
    text = (f"held to the op's minimum ({si(row['bytes'], 'B')}, {si(row['flops'], 'FLOP')}); its kernels declare "
            f"{si(row['own_bytes'], 'B')}, {row['own_bytes'] / row['bytes']:.2f}x the bytes")
    if with_figures:
        text += f", and move them at {percent(row['own_efficiency'])} of the roof: the extra traffic is the loss"
    return text


def render_lessons(report: pd.DataFrame, entries: list[dict[str, Any]], ceilings: Ceilings, *, header: str,
                   with_targets: bool, with_verdicts: bool = True) -> Group:
    dram = ceilings.dram()
    roofs = f"roofs: DRAM {si(dram.value, 'B/s')} ({dram.source}); " + ", ".join(
        f"{k} {si(r.value, 'FLOP/s')} ({r.source})" for k, r in sorted(ceilings.compute_flops_per_s.items()))
    return Group(Text(header), Text(roofs), lessons_table(report, entries),
                 *lesson_notes(report, entries, with_targets=with_targets, with_verdicts=with_verdicts))


def _jsonable(value: Any) -> Any:
    """JSON has no NaN or inf (null instead) and no numpy scalars."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def lessons_json(report: pd.DataFrame, entries: list[dict[str, Any]], ceilings: Ceilings,
                 header: dict[str, Any]) -> str:
    """Everything the table shows, per lesson and variant, with the roofs used."""
    figures = _figures(report)
    lessons = []
    for entry in entries:
        variants = []
        for result in entry["results"]:
            row = figures.get((entry["name"], result["variant"]))
            placed = {k: _jsonable(row[k]) for k in FIGURES} if row is not None else {}
            variants.append({**result, **placed})
        lessons.append({k: v for k, v in entry.items() if k != "results"} | {"variants": variants})
    payload = {
        **header,
        "roofs": {"memory_bytes_per_s": {k: r.value for k, r in ceilings.memory_bytes_per_s.items()},
                  "compute_flops_per_s": {k: r.value for k, r in ceilings.compute_flops_per_s.items()},
                  "sources": {k: r.source for k, r in {**ceilings.memory_bytes_per_s,
                                                         **ceilings.compute_flops_per_s}.items()},
                  "measurements": ceilings.details.get("measurements") or []},
        "lessons": lessons,
    }
    return json.dumps(_jsonable(payload), indent=1, allow_nan=False)
