"""What `rooflinectl profile --counters` says once the counters phase (rooflinectl/profiling_counters.py) is over."""

from __future__ import annotations

from rooflinectl.outputs.validate_render import coverage_text, warm_text
from rooflinectl.profile_sections import Summary


def counters_line(summary: Summary) -> str:
    """One line on what the counters covered, or why there are none."""
    c = summary.get("counters") or {}
    if c.get("status") != "measured":
        return f"counters: {c.get('status', 'none')}: {c.get('reason', '')}".rstrip(": ")
    share = c.get("time_share_measured")
    text = (f"counters: ncu {c.get('ncu_version', '')} measured {c['launches_measured']} of {c['launches_counted']} "
            f"launches ({coverage_text(c)}" + (f", {100 * share:.1f}% of kernel time" if share is not None else "")
            + f") in {c.get('wall_s', 0):.1f} s")
    return text + "".join(f"; {n}" for n in [*c.get("notes", []), warm_text(c)] if n)
