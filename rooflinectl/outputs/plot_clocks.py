"""The strip under the roofline (`plot --clocks`): SM clock and power over the run, from the NVML
samples the profile holds, with the spans a power or thermal cap was on and the counted kernels'
span marked. Draws what analysis/charts.clock_strip computed.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import SubFigure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from rooflinectl.analysis.charts import ClockStrip

CLOCK_COLOR = "#1f77b4"
POWER_COLOR = "#ff7f0e"
CAP_COLOR = "#d62728"
STRIP_RECT = (0.09, 0.2, 0.82, 0.62)


def draw_clock_strip(panel: SubFigure, strip: ClockStrip) -> None:
    """SM clock (left axis) and power (right axis) against seconds since the first counted kernel."""
    samples, t_s, busy = strip.samples, strip.t_s, strip.busy
    ax = panel.add_axes(STRIP_RECT)
    ax.axvspan(0.0, strip.counted_end_s, color="#eeeeee", zorder=0, gid="clocks:counted")
    for a, b in strip.capped_spans:
        ax.axvspan(a, b, color=CAP_COLOR, alpha=0.15, zorder=1, gid="clocks:capped")
    ax.plot(t_s, samples.sm_clock_mhz, color=CLOCK_COLOR, lw=1.3, zorder=3, gid="clocks:sm")
    ax.plot(t_s[~busy], samples.sm_clock_mhz[~busy], ls="", marker=".", ms=3, color="#8c8c8c", zorder=4,
            gid="clocks:idle")
    top_mhz = samples.device.get("max_sm_clock_mhz") or np.nanmax(samples.sm_clock_mhz)
    ax.set_ylim(0, float(top_mhz) * 1.08)
    ax.set_ylabel("SM clock (MHz)", color=CLOCK_COLOR)
    ax.set_xlabel("seconds since the first counted kernel")
    power_ax = ax.twinx()
    power_ax.plot(t_s, samples.power_w, color=POWER_COLOR, lw=1.1, zorder=3, gid="clocks:power")
    limit_w = samples.device.get("power_limit_w")
    if limit_w:
        power_ax.axhline(float(limit_w), color=POWER_COLOR, ls="--", lw=0.9, gid="clocks:power_limit")
    power_ax.set_ylim(0, float(limit_w or np.nanmax(samples.power_w) or 1.0) * 1.08)
    power_ax.set_ylabel("power (W)", color=POWER_COLOR)
    handles = [Line2D([], [], color=CLOCK_COLOR, label="SM clock"),
               Line2D([], [], color="#8c8c8c", marker=".", ls="", label="idle (not a kernel's clock)"),
               Line2D([], [], color=POWER_COLOR, label="power (NVML's 1 s average)"),
               Line2D([], [], color=POWER_COLOR, ls="--", label="power limit"),
               Patch(color=CAP_COLOR, alpha=0.15, label="power or thermal cap"),
               Patch(color="#eeeeee", label="counted kernels")]
    ax.legend(handles=handles, loc="lower left", ncol=6, fontsize=8, frameon=False, bbox_to_anchor=(0.0, 1.0))
    panel.text(STRIP_RECT[0], 0.95, f"NVML every {samples.period_s * 1e3:.0f} ms: {len(samples)} samples",
               fontsize=9, color="#444444", gid="clocks:title")
