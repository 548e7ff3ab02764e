"""The one JSON walk (analysis/json_values.json_ready) against values written by hand, and the
JSON documents that now share it: no NaN or numpy scalar anywhere in them, however deep."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
from test_plot_helpers import make_profile

from rooflinectl.analysis.json_values import json_ready
from rooflinectl.outputs.profile_file import load_profile, save_profile
from rooflinectl.outputs.table import table_json


def test_by_hand() -> None:
    value = {"a": math.nan, "b": [1.5, math.inf, (-math.inf, 2)], "c": {"d": np.float32("nan"), "e": np.int64(7)},
             "f": np.float64(0.25), "g": "nan", "h": None, "i": True, "j": np.bool_(False), 3: [np.float32(1.5)]}
    out = json_ready(value)
    assert out == {"a": None, "b": [1.5, None, [None, 2]], "c": {"d": None, "e": 7}, "f": 0.25, "g": "nan",
                   "h": None, "i": True, "j": False, 3: [1.5]}
    assert type(out["c"]["e"]) is int and type(out["f"]) is float and type(out["j"]) is bool
    assert math.isnan(value["a"]) and value["b"][2] == (-math.inf, 2)  # a copy: the input is left as it was
    json.dumps(out, allow_nan=False)  # strict JSON: would raise on NaN, inf or a numpy integer


def test_nested_summary_figures_reach_json_as_null(tmp_path: Path) -> None:
    """A NaN inside a nested summary figure (clocks, distributed) and in the metadata: `show
    --format json` and the profile file write null where they used to refuse the whole document."""
    data = make_profile()
    data.summary["clocks"] = {"status": "sampled", "max_sm_clock_mhz": np.float64(1980.0), "period_s": math.nan,
                              "sm_clock_mhz": {"mean": np.float64(1900.0), "min": 1800.0, "max": 1980.0}}
    data.metadata["gpu_temperature_c"] = math.nan
    shown = json.loads(table_json(data.kernels, data))
    assert shown["summary"]["clocks"]["period_s"] is None
    assert shown["summary"]["clocks"]["max_sm_clock_mhz"] == 1980.0
    assert type(shown["summary"]["clocks"]["sm_clock_mhz"]["mean"]) is float
    assert len(shown["kernels"]) == len(data.kernels)
    path = tmp_path / "p.json"
    save_profile(data, path)
    again = load_profile(path)
    assert again.summary["clocks"]["period_s"] is None
    assert again.summary["clocks"]["sm_clock_mhz"] == {"mean": 1900.0, "min": 1800.0, "max": 1980.0}
    assert again.metadata["gpu_temperature_c"] is None
    pd.testing.assert_series_equal(again.kernels["time_s"], data.kernels["time_s"])
