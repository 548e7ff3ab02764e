"""One "short launch" threshold (5 us, schema.SHORT_LAUNCH_S): the summary's count, the launch
rule's text and the kernel rules' skip all change together."""

from __future__ import annotations

import pandas as pd
import pytest

from rooflinectl.analysis.advice.common import is_short_launch
from rooflinectl.analysis.roofline import summarise
from rooflinectl.schema import SUMMARY_KEYS


@pytest.mark.parametrize("calls, time_s, short", [(1, 4.9e-6, True), (1, 5.0e-6, False), (10, 49e-6, True),
                                                   (10, 51e-6, False), (0, 4e-6, True)])
def test_short_per_call_by_hand(calls: int, time_s: float, short: bool) -> None:
    assert is_short_launch(pd.Series({"calls": calls, "time_s": time_s})) is short


def test_summary_counts_what_the_rules_skip() -> None:
    durations_s = [1e-6, 4.9e-6, 5.0e-6, 30e-6]
    starts = [0, 10_000, 20_000, 30_000]
    launches = pd.DataFrame({"start_ns": starts, "end_ns": [a + int(d * 1e9) for a, d in zip(starts, durations_s)],
                             "time_s": durations_s})
    s = summarise(pd.DataFrame({"time_s": durations_s, "cost_source": ["analytic"] * 4}), launches, 1e-4, [], 1)
    assert s["short_launches"] == 2
    assert s["short_launches"] == sum(is_short_launch(pd.Series({"calls": 1, "time_s": d})) for d in durations_s)
    assert SUMMARY_KEYS["short_launches"] == "launches shorter than 5 microseconds"
