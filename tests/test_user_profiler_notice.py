"""When rooflinectl takes over a script's own torch.profiler it says so at run time, in one line on
stderr, once per run however many cycles the script's schedule makes (issue 35); not with -q,
and not for a script without a profiler."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from rooflinectl.capture.run.user_profiler import TAKEN_OVER
from rooflinectl.cli.main import main

OWN_PROFILER = """import torch
x = torch.randn(32, 32)
sched = torch.profiler.schedule(wait=0, warmup=1, active=1, repeat=2)
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], schedule=sched) as prof:
    for _ in range(5):
        y = x @ x
        prof.step()
print("done")
"""


def _profile(tmp_path: Path, text: str, *extra: str):
    script = tmp_path / "own.py"
    script.write_text(text)
    return CliRunner().invoke(main, ["profile", str(script), "-o", str(tmp_path / "p.json"), "--device", "cpu",
                                     "--iterations", "none", *extra])


@pytest.mark.filterwarnings("ignore:Warning. Profiler clears events")  # one stand-in per cycle, as we want
def test_taking_over_the_scripts_profiler_is_said_once(tmp_path: Path) -> None:
    result = _profile(tmp_path, OWN_PROFILER)
    assert result.exit_code == 0, result.output
    said = [line for line in result.stderr.splitlines() if TAKEN_OVER in line]
    assert said == [f"rooflinectl: {TAKEN_OVER}"], result.stderr
    assert TAKEN_OVER not in result.stdout  # the script's standard output is its own
    assert len(said[0]) <= 80


@pytest.mark.filterwarnings("ignore:Warning. Profiler clears events")
def test_quiet_and_plain_scripts_say_nothing(tmp_path: Path) -> None:
    quiet = _profile(tmp_path, OWN_PROFILER, "-q")
    assert quiet.exit_code == 0, quiet.output
    assert TAKEN_OVER not in quiet.output
    plain = _profile(tmp_path, "import torch\nx = torch.randn(32, 32)\ny = x @ x\n")
    assert plain.exit_code == 0, plain.output
    assert TAKEN_OVER not in plain.output
