"""`rooflinectl kernels` output: the variants table (rich) and its JSON. Renders; never prints.

Input: the compared variants table (analysis/kernel_suite.py: one row per variant that ran) and the
reference kernel entries (name, concept, target, and every variant's raw result: check, autotune, error).
Strings from results (error messages) are shown as text, never as rich markup.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from rooflinectl.analysis.json_values import json_ready
from rooflinectl.ceilings.model import Ceilings
from rooflinectl.outputs.escape import rich_text
from rooflinectl.outputs.plot_names import ellipsize
from rooflinectl.outputs.table import BOUND_STYLE, fit_columns
from rooflinectl.units import percent, seconds, si

# The number columns, left to right after the reference kernel and variant, and the order they give way in
# when the terminal is narrow (first listed, first dropped): time, % of roof and check always stay.
COLUMNS = ("time", "FLOP/s", "B/s", "bound", "roof", "% of roof", "vs library", "check")
DROP_ORDER = ("FLOP/s", "B/s", "bound", "vs library", "roof")
MIN_NAME_WIDTH = (12, 16)
LIBRARY_NOTE = "torch's own result, reported only: the reference kernels' Triton kernels alone can fail the run"
FIGURES = ["time_s", "flops", "bytes", "achieved_flops_per_s", "achieved_bytes_per_s", "intensity", "bound",
           "efficiency", "roof", "roof_value", "roof_source", "vs_library", "unit", "precision", "kernel",
           "cost_source", "cost_note", "above_roof", "own_flops", "own_bytes", "own_efficiency"]


def _figures(report: pd.DataFrame) -> dict[tuple[str, str], pd.Series]:
    return {(r["name"], r["variant"]): r for _, r in report.iterrows()}


def _check_text(result: dict[str, Any]) -> Text:
    if result.get("error"):
        return Text("failed", style="red")
    check = result.get("check") or {}
    if not check:
        return Text("-")
    if check.get("ok"):
        return Text("ok", style="green")
    return Text("differs", style="yellow") if result["kind"] == "torch" else Text("mismatch", style="bold red")


def _roof_text(row: pd.Series) -> str:
    """The roof's name: its value is on the roofs line above the table (and in the JSON)."""
    return "DRAM" if row["roof"] == "dram" else str(row["roof"])


def _ratio(value: float) -> str:
    return "-" if value != value else f"{value:.2f}x"


def _cells(result: dict[str, Any], row: pd.Series | None) -> dict[str, Text]:
    if row is None:
        return {c: Text("-") for c in COLUMNS} | {"check": _check_text(result)}
    eff = Text(f"{percent(row['efficiency'])}!", style="bold red") if row["above_roof"] else Text(percent(row["efficiency"]))
    return {
        "time": Text(seconds(row["time_s"])), "FLOP/s": Text(si(row["achieved_flops_per_s"], "FLOP/s")),
        "B/s": Text(si(row["achieved_bytes_per_s"], "B/s")),
        "bound": rich_text(row["bound"], style=BOUND_STYLE.get(row["bound"], "white")),
        "roof": rich_text(_roof_text(row)), "% of roof": eff,
        "vs library": Text("-" if result["role"] == "library" else _ratio(row["vs_library"])),
        "check": _check_text(result),
    }


def variants_table(report: pd.DataFrame, entries: list[dict[str, Any]], width: int | None = None) -> Table:
    """One row per variant, grouped by reference kernel: time, achieved rates, bound, roof, % of roof, vs
    library, check; fitted to `width` characters as `show` fits its table (outputs/table.py:
    number columns give way in DROP_ORDER, then names are shortened; None: every column)."""
    figures = _figures(report)
    rows = []
    for entry in entries:
        for i, result in enumerate(entry["results"]):
            variant = result["variant"] + (" (library)" if result["role"] == "library" else "")
            rows.append((entry["name"] if i == 0 else "", variant, _cells(result, figures.get((entry["name"], result["variant"])))))
    widths = {c: max([len(c)] + [cells[c].cell_len for _, _, cells in rows]) for c in COLUMNS}
    natural = (max([len("kernel")] + [len(a) for a, _, _ in rows]), max([len("variant")] + [len(b) for _, b, _ in rows]))
    shown, names = fit_columns(widths, natural, width, COLUMNS, DROP_ORDER, MIN_NAME_WIDTH)
    grid = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1, 0, 0), header_style="bold")
    grid.add_column("kernel", no_wrap=True, max_width=names[0])
    grid.add_column("variant", no_wrap=True, max_width=names[1])
    for c in shown:
        grid.add_column(c, justify="left" if c in ("bound", "roof", "check") else "right", no_wrap=True)
    for spec, variant, cells in rows:
        if spec and grid.row_count:
            grid.add_section()
        grid.add_row(rich_text(ellipsize(spec, names[0])), rich_text(ellipsize(variant, names[1])),
                     *[cells[c] for c in shown])
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


def kernel_notes(report: pd.DataFrame, entries: list[dict[str, Any]], *,
                 targets: dict[str, tuple[float, bool]] | None,
                 with_verdicts: bool = True) -> list[Text]:
    """Per reference kernel: when not to write the kernel (with_verdicts: only where times mean something),
    autotune choices, mismatches, failures, targets."""
    figures = _figures(report)
    lines: list[Text] = []
    for entry in entries:
        name = entry["name"]
        spec = next((r for r in entry["results"] if r["role"] == "kernel"), None)
        library = next((r for r in entry["results"] if r["role"] == "library"), None)
        row = figures.get((name, spec["variant"])) if spec else None
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
                torch_result = result["kind"] == "torch"
                lines.append(Text(f"{where}: {'differs from' if torch_result else 'does not match'} the fp32 "
                                  f"reference within atol {check['atol']:.2g}, rtol {check['rtol']:.2g}: "
                                  + "; ".join(check.get("worst") or []) + (f"; {LIBRARY_NOTE}" if torch_result else ""),
                                  style="yellow" if torch_result else "red"))
            own = figures.get((name, result["variant"]))
            if own is not None and own["own_bytes"] == own["own_bytes"]:
                lines.append(Text(f"{where}: {_own_cost_text(own, with_verdicts)}"))
        target = entry.get("target")
        if target and name in (targets or {}):  # analysis.kernel_suite.target_statuses: (figure, met)
            value, met = (targets or {})[name]
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


def render_suite(report: pd.DataFrame, entries: list[dict[str, Any]], ceilings: Ceilings, *, header: str,
                 targets: dict[str, tuple[float, bool]] | None = None, with_verdicts: bool = True,
                 width: int | None = None) -> Group:
    dram = ceilings.dram()
    roofs = f"roofs: DRAM {si(dram.value, 'B/s')} ({dram.source}); " + ", ".join(
        f"{k} {si(r.value, 'FLOP/s')} ({r.source})" for k, r in sorted(ceilings.compute_flops_per_s.items()))
    return Group(Text(header), Text(roofs), variants_table(report, entries, width),
                 *kernel_notes(report, entries, targets=targets, with_verdicts=with_verdicts))


def suite_json(report: pd.DataFrame, entries: list[dict[str, Any]], ceilings: Ceilings,
                 header: dict[str, Any]) -> str:
    """Everything the table shows, per reference kernel and variant, with the roofs used."""
    figures = _figures(report)
    specs = []
    for entry in entries:
        variants = []
        for result in entry["results"]:
            row = figures.get((entry["name"], result["variant"]))
            placed = {k: row[k] for k in FIGURES} if row is not None else {}
            variants.append({**result, **placed})
        specs.append({k: v for k, v in entry.items() if k != "results"} | {"variants": variants})
    payload = {
        **header,
        "roofs": {"memory_bytes_per_s": {k: r.value for k, r in ceilings.memory_bytes_per_s.items()},
                  "compute_flops_per_s": {k: r.value for k, r in ceilings.compute_flops_per_s.items()},
                  "sources": {k: r.source for k, r in {**ceilings.memory_bytes_per_s,
                                                         **ceilings.compute_flops_per_s}.items()},
                  "measurements": ceilings.details.get("measurements") or []},
        "kernels": specs,
    }
    return json.dumps(json_ready(payload), indent=1, allow_nan=False)
