"""Captures of the advice examples recorded on the H200 (tests/data/advice, README there), built
into profiles the way `rooflinectl profile` builds them, with the examples' own step timings."""

from __future__ import annotations

import functools
import json
from pathlib import Path

from advice_tables import h200_ceilings

from rooflinectl.capture.run.session import Capture, load_capture
from rooflinectl.pipeline import profile_data
from rooflinectl.profile_model import ProfileData

ADVICE = Path(__file__).parent / "data" / "advice"


@functools.cache
def example_capture(name: str) -> tuple[Capture, ProfileData]:
    """The before-capture of examples/NAME.py and its profile (spec H200 roofs)."""
    capture = load_capture(str(ADVICE / f"h200_{name}.before.capture.json.gz"))
    return capture, profile_data(capture, command=[f"examples/{name}.py"], completed=True, ceilings=h200_ceilings())


def step_ms(name: str, phase: str) -> float:
    """The example's median step time with --time (CUDA events, 50 steps, no profiler), ms."""
    line = (ADVICE / f"h200_{name}.{phase}.timing").read_text(encoding="utf-8").strip()
    return float(json.loads(line.removeprefix("TIMING "))["step_ms"])
