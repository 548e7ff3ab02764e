"""The link panel under the roofline: collectives have no FLOPs, so they are drawn against the link
instead, bus bandwidth (nccl-tests busbw) over message size, with the link roof and the all-reduce
curve `ceilings --measure` measured between the GPUs. Renders what the profile holds.

Points: each collective group at its message size and the bus bandwidth of its kernel time (which
holds the time it waited for the other ranks); for a merged rank set also the bandwidth of the
transfer alone (the shortest rank's kernel, analysis/ranks.py), filled, with the kernel's hollow.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib.figure import SubFigure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from rooflinectl.analysis.charts import ChartModel
from rooflinectl.profile_model import ProfileData
from rooflinectl.units import si

LINK_RECT = (0.09, 0.2, 0.52, 0.62)
ROOF_COLOR = "#333333"
CURVE_COLOR = "#2ca02c"
POINT_COLOR = "#17becf"


def link_rows(points: pd.DataFrame) -> pd.DataFrame:
    """The placed rows the panel draws (chart coordinates: x message bytes, y bus bytes/s): the
    collectives whose message size analysis/charts.chart_model found (column message_bytes)."""
    rows = points[points["where"] == "link"].copy()
    rows["msg"] = rows["message_bytes"] if "message_bytes" in rows.columns else np.nan
    return rows[rows["msg"] > 0]


def draw_link_panel(panel: SubFigure, data: ProfileData, rows: pd.DataFrame, area_pt2: pd.Series,
                    model: ChartModel) -> None:
    """Bus bandwidth against message size: link roof, measured curve, the collectives."""
    ax = panel.add_axes(LINK_RECT)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ys = [float(v) for v in rows["bytes_per_s"] if v > 0]
    roof = data.ceilings.link()
    curve = model.link_curve
    handles = []
    if curve is not None:
        ax.plot(curve[0], curve[1], color=CURVE_COLOR, marker=".", lw=1.3, gid="link:curve")
        ys += list(curve[1])
        handles.append(Line2D([], [], color=CURVE_COLOR, marker=".", label="all-reduce busbw measured (ceilings --measure)"))
    if roof is not None:
        ax.axhline(roof.value, color=ROOF_COLOR, lw=1.6, gid="link:roof")
        ys.append(roof.value)
        handles.append(Line2D([], [], color=ROOF_COLOR, label=f"link {si(roof.value, 'B/s', 3)} ({roof.source})"))
    ax.scatter(rows["msg"], rows["bytes_per_s"], s=area_pt2.loc[rows.index], facecolors="none",
               edgecolors=POINT_COLOR, linewidths=1.5, zorder=4, gid="link:kernel")
    handles.append(Line2D([], [], marker="o", ls="", markerfacecolor="none", color=POINT_COLOR,
                          label="kernel time (includes waiting for other ranks)"))
    transfers = [g for g in (data.summary.get("distributed") or {}).get("collectives") or []
                 if g.get("size_bytes") and g.get("bus_bytes_per_s") and math.isfinite(g["bus_bytes_per_s"])]
    if transfers:
        ax.scatter([g["size_bytes"] for g in transfers], [g["bus_bytes_per_s"] for g in transfers], s=40,
                   color=POINT_COLOR, zorder=5, gid="link:transfer")
        ys += [g["bus_bytes_per_s"] for g in transfers]
        handles.append(Line2D([], [], marker="o", ls="", color=POINT_COLOR, label="transfer (shortest rank's kernel)"))
    for r in rows.itertuples():
        ax.annotate(str(r.rank_by_time), (r.msg, r.bytes_per_s), xytext=(5, 3), textcoords="offset points",
                    fontsize=8, gid=f"link:label:{r.rank_by_time}")
    xs = list(rows["msg"]) + (list(curve[0]) if curve is not None else [])
    ax.set_xlim(min(xs) / 3, max(xs) * 3)
    positive = [y for y in ys if y > 0]
    ax.set_ylim(min(positive) / 3, max(positive) * 3)
    ax.xaxis.set_major_locator(LogLocator(base=10, numticks=12))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: si(v, "B", 3)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: si(v, "B/s", 3)))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("bus bandwidth (nccl-tests busbw)")
    ax.grid(True, which="major", color="#e4e4e4", linewidth=0.7)
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8.5, frameon=False)
    panel.text(LINK_RECT[0], 0.95, f"Collectives against the link ({len(rows)} groups, numbered as in the table)",
               fontsize=9.5, color="#444444", gid="link:title")
