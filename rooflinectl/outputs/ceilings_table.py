"""Rich renderables for `rooflinectl ceilings`: roofs, measurements, ridge points, what was read.

Nothing here prints: `render_ceilings` returns a Group the caller prints; `ceilings_json`
returns the text of `--format json`.
"""

from __future__ import annotations

import json
import math
from typing import Any

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from rooflinectl.analysis.json_values import json_ready
from rooflinectl.ceilings.build import ridge_points
from rooflinectl.ceilings.measurement import kind_of
from rooflinectl.ceilings.model import Ceilings, Roof
from rooflinectl.outputs.table import fit_columns
from rooflinectl.units import percent, seconds, si

_SOURCE_STYLE = {"measured": "green", "spec": "cyan", "spec-clock-scaled": "cyan", "estimate": "yellow"}


def value_and_unit(value: float | None, kind: str, key: str = "") -> tuple[str, str]:
    """("4.28", "TB/s") style pair for a memory, link, compute or latency figure."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-", ""
    if kind == "latency":
        text = seconds(value)
    elif kind in ("memory", "link"):
        text = si(value, "B/s")
    else:
        text = si(value, "OP/s" if key.endswith("int8") else "FLOP/s")
    number, _, unit = text.partition(" ")
    return number, unit


def _ratio_to_spec(key: str, roof: Roof, ceilings: Ceilings) -> float | None:
    spec = ceilings.details.get("spec_roofs", {}).get(key)
    if not spec or spec.get("source") not in ("spec", "spec-clock-scaled") or not spec.get("value"):
        return None
    return roof.value / float(spec["value"])


def _compute_order(key: str) -> tuple[int, int]:
    unit, _, precision = key.partition(".")
    order = ("fp4", "fp8", "int8", "fp16", "bf16", "tf32", "fp32", "fp64")
    return (0 if unit == "tensor" else 1, order.index(precision) if precision in order else 99)


_MIN_TEXT_WIDTH = (24, 30)  # the name (whole keys), and the how / method text, before a short column gives way


def _fitted_table(title: str, header: tuple[tuple[str, str], ...], rows: list[list[Any]], width: int | None,
                  drop_order: tuple[str, ...]) -> Table:
    """rows: [name, short cells..., text]; the short columns give way in drop_order and the two
    text columns share the rest of `width` (outputs/table.fit_columns, as `show` fits its table)."""
    names = [h for h, _ in header]
    short = tuple(names[1:-1])
    cell_len = {c: max([len(c)] + [Text.from_markup(str(r[i + 1])).cell_len if not isinstance(r[i + 1], Text)
                                   else r[i + 1].cell_len for r in rows]) for i, c in enumerate(short)}
    natural = (max([len(names[0])] + [len(str(r[0])) for r in rows]),
               max([len(names[-1])] + [max((len(line) for line in str(r[-1]).splitlines()), default=0) for r in rows]))
    least = (min(natural[0], _MIN_TEXT_WIDTH[0]), min(natural[1], _MIN_TEXT_WIDTH[1]))
    shown, (first, last) = fit_columns(cell_len, natural, width, short, drop_order, least)
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
                  padding=(0, 1, 0, 0), header_style="bold")
    keep = [0] + [i + 1 for i, c in enumerate(short) if c in shown] + [len(names) - 1]
    for i in keep:
        limit = first if i == 0 else last if i == len(names) - 1 else None
        table.add_column(names[i], justify=header[i][1], overflow="fold", no_wrap=limit is None, max_width=limit)
    for r in rows:
        table.add_row(*[r[i] for i in keep])
    return table


def roofs_table(ceilings: Ceilings, width: int | None = None) -> Table:
    rows: list[tuple[str, Roof, str]] = [(f"memory.{k}", r, "memory") for k, r in
                                         sorted(ceilings.memory_bytes_per_s.items())]
    rows += [(k, ceilings.compute_flops_per_s[k], "compute")
             for k in sorted(ceilings.compute_flops_per_s, key=_compute_order)]
    rows += [(f"link.{k}", r, "link") for k, r in sorted(ceilings.link_bytes_per_s.items())]
    rows.append(("kernel floor", ceilings.kernel_floor_s, "latency"))
    cells: list[list[Any]] = []
    for name, roof, kind in rows:
        key = name.removeprefix("memory.")
        number, unit = value_and_unit(roof.value, kind, key)
        ratio = _ratio_to_spec(key, roof, ceilings) if kind not in ("latency", "link") else None
        style = _SOURCE_STYLE.get(roof.source, "")
        clock = f" (at {roof.clock_mhz:,.0f} MHz SM clock)" if roof.source == "measured" and roof.clock_mhz else ""
        cells.append([name, number, unit, Text(roof.source, style=style),
                      percent(ratio) if ratio is not None else "-", roof.note + clock])
    header = (("ceiling", "left"), ("value", "right"), ("unit", "left"), ("source", "left"), ("% of spec", "right"),
              ("how", "left"))
    return _fitted_table(f"Ceilings: {ceilings.device_name} ({ceilings.device_kind})", header, cells, width,
                         ("% of spec",))


def _mhz(roof: Roof | None) -> str:
    return f"{roof.clock_mhz:,.0f} MHz" if roof is not None and roof.clock_mhz else "-"


def compute_table(ceilings: Ceilings, width: int | None = None) -> Table | None:
    """Per precision: the peak the roof uses (a ceiling: clock-scaled spec where known), the
    measured achievable figure (the dashed line), and the SM clock each holds at."""
    keys = sorted(set(ceilings.compute_flops_per_s) | set(ceilings.achievable_flops_per_s), key=_compute_order)
    if not keys:
        return None
    cells: list[list[Any]] = []
    for key in keys:
        peak, achievable = ceilings.compute_flops_per_s.get(key), ceilings.achievable_flops_per_s.get(key)
        unit = key.endswith("int8") and "OP/s" or "FLOP/s"
        ratio = achievable.value / peak.value if peak and achievable and peak.value > 0 else None
        cells.append([key, si(peak.value, unit) if peak else "-", _mhz(peak),
                      si(achievable.value, unit) if achievable else "-", _mhz(achievable),
                      percent(ratio) if ratio is not None else "-",
                      (achievable.note if achievable else "not measured: `rooflinectl ceilings --measure`")])
    header = (("compute", "left"), ("peak (roof)", "right"), ("SM clock", "right"), ("achievable", "right"),
              ("its clock", "right"), ("of peak", "right"), ("achievable: how measured", "left"))
    return _fitted_table("Compute: the peak each roof uses, and the achievable peak measured here", header, cells,
                         width, ("of peak", "its clock", "SM clock"))


def measurements_table(ceilings: Ceilings, width: int | None = None) -> Table | None:
    rows: list[dict[str, Any]] = ceilings.details.get("measurements") or []
    if not rows:
        return None
    when = ceilings.details.get("measured_at") or "?"
    cells: list[list[Any]] = []
    for row in rows:
        number, unit = value_and_unit(row.get("value"), kind_of(row["key"]), row["key"])
        ratio = row.get("ratio_to_spec")
        text = Text(row.get("method") or "")
        for extra, style in ((row.get("note"), "dim"), (row.get("flag"), "bold red")):
            if extra:
                text.append(("\n" if text.plain else "") + extra, style=style)
        cells.append([row["key"], number, unit, percent(ratio) if ratio is not None else "-",
                      "yes" if row.get("used_as_roof") else "", text])
    header = (("measurement", "left"), ("value", "right"), ("unit", "left"), ("% of spec", "right"),
              ("roof", "center"), ("method / flag", "left"))
    return _fitted_table(f"Measurements ({when})", header, cells, width, ("% of spec",))


def ridge_table(ceilings: Ceilings) -> Table | None:
    points = ridge_points(ceilings)
    if not points:
        return None
    levels = sorted({p["memory"] for p in points})
    table = Table(title="Ridge points, FLOP/byte", title_justify="left")
    table.add_column("compute roof")
    for level in levels:
        table.add_column(level, justify="right")
    by_compute: dict[str, dict[str, float]] = {}
    for p in points:
        by_compute.setdefault(p["compute"], {})[p["memory"]] = p["intensity_flop_per_byte"]
    for key in sorted(by_compute, key=_compute_order):
        table.add_row(key, *(f"{by_compute[key][lv]:.3g}" if lv in by_compute[key] else "-"
                             for lv in levels))
    return table


_DEVICE_FIELDS = (
    ("compute_capability", "compute capability", lambda v: f"{v[0]}.{v[1]}"),
    ("sms", "SMs", str),
    ("l2_bytes", "L2", lambda v: f"{v / 2**20:.0f} MiB"),
    ("memory_bytes", "memory", lambda v: f"{v / 2**30:.1f} GiB"),
    ("max_sm_clock_hz", "max SM clock", lambda v: f"{v / 1e6:.0f} MHz"),
    ("current_sm_clock_hz", "current SM clock", lambda v: f"{v / 1e6:.0f} MHz"),
    ("max_mem_clock_hz", "memory clock", lambda v: f"{v / 1e6:.0f} MHz"),
    ("bus_width_bits", "bus width", lambda v: f"{v} bits"),
    ("power_limit_w", "power limit", lambda v: f"{v:.0f} W"),
    ("throttle_reasons", "throttle reasons", lambda v: ", ".join(v) or "none"),
    ("driver", "driver", str),
    ("logical_cpus", "logical CPUs", str),
    ("threads", "torch threads", str),
)


def device_text(ceilings: Ceilings) -> Text:
    """What was detected and from where, the spec entry used, and what could not be read."""
    details = ceilings.details
    device = details.get("device", {})
    sources = device.get("sources", {})
    text = Text()
    parts = []
    for key, label, fmt in _DEVICE_FIELDS:
        value = device.get(key)
        if value is None:
            continue
        src = f" [{sources[key]}]" if key in sources else ""
        parts.append(f"{label} {fmt(value)}{src}")
    if parts:
        text.append("Detected: " + "; ".join(parts) + "\n")
    if details.get("spec_entry"):
        text.append(f"Spec entry: {details['spec_entry']} ({details.get('spec_source_url')})\n")
    if details.get("cache"):
        text.append(f"Measured ceilings cached in {details['cache']}\n", style="dim")
    topology = (details.get("link") or {}).get("topology") or {}
    if topology.get("gpus"):
        gpus = topology["gpus"]
        links = ", ".join(f"GPU {g.get('index')}: {g.get('nvlink_active') or 0} NVLink"
                          + (f" {g['nvlink_version']}" if g.get("nvlink_version") else "") for g in gpus)
        p2p = topology.get("p2p_nvlink") or []
        text.append(f"Link topology seen: {len(gpus)} GPU(s); {links}"
                    + (f"; peer-to-peer over NVLink: {sum(ok for _, _, ok in p2p)} of {len(p2p)} pairs" if p2p else "")
                    + " (`--format json` has `nvidia-smi topo -m`)\n")
    for line in details.get("missing", []):
        text.append(f"Could not read / know: {line}\n", style="yellow")
    flagged = [r for r in details.get("measurements", []) if r.get("flag")]
    for row in flagged:
        text.append(f"FLAG {row['key']}: {row['flag']}\n", style="bold red")
    return text


def render_ceilings(ceilings: Ceilings, width: int | None = None) -> Group:
    """The roofs, measurements, ridge points and device facts, the tables fitted to `width` characters."""
    parts: list[Any] = [roofs_table(ceilings, width)]
    compute = compute_table(ceilings, width)
    if compute is not None:
        parts.append(compute)
    measured = measurements_table(ceilings, width)
    if measured is not None:
        parts.append(measured)
    ridges = ridge_table(ceilings)
    if ridges is not None:
        parts += [ridges, Text("Ridge point: the intensity where a compute roof meets a memory roof; "
                               "below it a kernel is memory-bound.", style="dim")]
    parts.append(device_text(ceilings))
    return Group(*parts)


def ceilings_json(ceilings: Ceilings) -> str:
    """`--format json`: the Ceilings dict plus the ridge points; NaN/inf written as null."""
    payload = {"ceilings": ceilings.to_dict(), "ridge_points": ridge_points(ceilings)}
    return json.dumps(json_ready(payload), indent=2, default=str)
