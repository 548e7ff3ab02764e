"""scripts/investigations/post_stop_stats.py, the figures of the H200 piece 64-post-stop: the
shift of ours against the control and its interval, on rows whose answer is known."""

from __future__ import annotations

import importlib.util
import json
import math
import random
import sys
from pathlib import Path

import pytest

PATH = Path(__file__).resolve().parents[1] / "scripts" / "investigations" / "post_stop_stats.py"


@pytest.fixture(scope="module")
def stats():
    spec = importlib.util.spec_from_file_location("post_stop_stats", PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rows(shift: float, n: int = 12, seed: int = 1) -> list[dict]:
    """n rounds of control and ours: per-process after/before ratios with 5% noise, ours times
    (1 + shift); levels that differ 1.8x between processes (they cancel in the ratio)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        for mode, factor in (("control", 1.0), ("ours", 1.0 + shift)):
            level = rng.uniform(10, 18)
            ratio = factor * math.exp(rng.gauss(0, 0.05))
            state = {"gc_tracked": 1000, "gc_frozen": 0, "optimizer_hooks": int(mode == "ours")}
            out.append({"mode": mode, "ratio": ratio, "before_ms": [level], "after_ms": [level * ratio],
                        "probes_before_us": {"cpu_op_us": 4.0, "module_call_us": 1.2},
                        "probes_after_us": {"cpu_op_us": 4.0 * factor, "module_call_us": 1.2},
                        "state_before": state, "state_after": state})
    return out


def test_the_shift_is_the_median_of_pairwise_differences(stats) -> None:
    assert stats.hodges_lehmann([1.0, 2.0, 3.0], [0.0]) == 2.0
    assert stats.hodges_lehmann([1.0, 5.0], [0.0, 2.0]) == pytest.approx(2.0)  # diffs 1, -1, 5, 3


def test_no_cost_is_ok_and_a_20_percent_cost_fails(stats) -> None:
    same = "\n".join(stats.compare(rows(0.0), "ours", bound_pct=10.0, gap_pct=8.0))
    assert "CHECK post-stop ours step: ok" in same and "is excluded" in same
    slow = "\n".join(stats.compare(rows(0.20), "ours", bound_pct=3.0, gap_pct=8.0))
    assert "CHECK post-stop ours step: FAILED" in slow and "NOT excluded" in slow
    assert "CHECK post-stop ours probes: FAILED" in slow  # the CPU op probe carries the 20% too
    shift = next(line for line in slow.splitlines() if line.startswith("FIGURE post-stop ours vs control, step "))
    assert 15 < float(shift.split("after/before: ")[1].split("%")[0]) < 25  # the 20% put in, within the noise


def test_the_file_gives_figures_and_too_few_processes_say_so(stats, tmp_path: Path, capsys) -> None:
    path = tmp_path / "blocks.jsonl"
    path.write_text("".join(f"BLOCKS {json.dumps(r)}\n" for r in rows(0.0, n=2)) + "noise\nBLOCKS {not json\n")
    saved = sys.argv
    sys.argv = ["post_stop_stats.py", str(path)]
    try:
        code = stats.main()
    finally:
        sys.argv = saved
    out = capsys.readouterr().out
    assert code == 1 and "too few processes (2 ours, 2 control)" in out
    assert out.count("FIGURE post-stop ") >= 3
