"""CI settings from [tool.rooflinectl] in pyproject.toml (flags given on the command line win).

Keys (either spelling, `min-efficiency` or `min_efficiency`), flat under [tool.rooflinectl] or in
its [tool.rooflinectl.advise] / [tool.rooflinectl.diff] sub-tables:
  fail_on = "warning"            # info | warning | error
  min_efficiency = 0.3           # gate.min-efficiency
  max_unknown_share = 0.2        # gate.unknown-share
  max_launch_overhead = 0.3      # gate.launch-overhead
  min_saving_share = 0.01        # findings saving less become info
  max_findings_per_rule = 5
  max_findings = 10              # shown in all (0: every one, as --all)
  hide_below = 0.001             # fixes saving less than this share of the run are left out
  select = ["fusion", "attention.materialised-scores"]   # only these rules (ids or prefixes)
  ignore = ["roof.stop-here"]    # rules not to run (`disable` is the same list)
  fail_on_regression = 5.0       # diff: percent
Any other key is an error naming the nearest valid one: a misspelt key would silently switch a
gate off. Numbers must be finite and in range (shares between 0 and 1).

Reading the file is input parsing at the edge, so it lives with the commands that read it
(`advise`, `diff`); the advice rules (analysis) receive plain Thresholds and never read files.
"""

from __future__ import annotations

import difflib
import importlib
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rooflinectl.analysis.advice.registry import SEVERITIES
from rooflinectl.errors import UsageError


@dataclass
class AdviceConfig:
    values: dict[str, Any] = field(default_factory=dict)
    source: str = ""  # the pyproject.toml read, "" when none
    message: str = ""  # a sentence for stderr when the file could not be read (e.g. no TOML reader)


def _toml_module() -> Any | None:
    """tomllib (Python 3.11+), else tomli when installed, else None."""
    if sys.version_info >= (3, 11):
        return importlib.import_module("tomllib")
    try:
        return importlib.import_module("tomli")
    except ImportError:
        return None


def find_pyproject(start: Path) -> Path | None:
    """The nearest pyproject.toml in start or a folder above it."""
    for folder in [start.resolve(), *start.resolve().parents]:
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


# key -> (low, high) for numbers; shares are fractions of a whole, the regression a percentage
_NUMBER_RANGES = {"min_efficiency": (0.0, 1.0), "max_unknown_share": (0.0, 1.0), "max_launch_overhead": (0.0, 1.0),
                  "min_saving_share": (0.0, 1.0), "hide_below": (0.0, 1.0), "fail_on_regression": (0.0, math.inf)}
_FLOAT_KEYS = tuple(_NUMBER_RANGES)
KNOWN_KEYS = (*_FLOAT_KEYS, "fail_on", "max_findings_per_rule", "max_findings", "disable", "select", "ignore")
SECTIONS = ("advise", "diff")


def _unknown(raw_key: str, origin: str, known: tuple[str, ...]) -> UsageError:
    """An unknown key is an error (a typo would switch a gate off), with the nearest valid name."""
    near = difflib.get_close_matches(raw_key.replace("-", "_"), known, n=1, cutoff=0.6)
    hint = f" (did you mean {near[0]}?)" if near else f"; known keys: {', '.join(known)}"
    return UsageError(f"{origin}: unknown key {raw_key!r}{hint}.")


def _normalise(table: dict[str, Any], origin: str, sections: tuple[str, ...] = ()) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for raw_key, value in table.items():
        key = raw_key.replace("-", "_")
        if key in sections:
            if not isinstance(value, dict):
                raise UsageError(f"{origin}: {raw_key} must be a table ([tool.rooflinectl.{key}]).")
            continue
        if isinstance(value, dict):
            raise _unknown(raw_key, origin, sections or KNOWN_KEYS)
        if key in _FLOAT_KEYS:
            low, high = _NUMBER_RANGES[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                    or not low <= value <= high:
                span = f"between {low:g} and {high:g}" if math.isfinite(high) else f"a number >= {low:g}"
                raise UsageError(f"{origin}: {raw_key} must be {span}, not {value!r}.")
            out[key] = float(value)
        elif key == "fail_on":
            if value not in SEVERITIES:
                raise UsageError(f"{origin}: fail_on must be one of {', '.join(SEVERITIES)}, not {value!r}.")
            out[key] = value
        elif key == "max_findings_per_rule":
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise UsageError(f"{origin}: max_findings_per_rule must be a positive integer.")
            out[key] = value
        elif key == "max_findings":
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise UsageError(f"{origin}: max_findings must be an integer >= 0 (0 shows every finding).")
            out[key] = value
        elif key in ("disable", "select", "ignore"):
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise UsageError(f"{origin}: {raw_key} must be a list of rule ids.")
            out[key] = tuple(value)
        else:
            raise _unknown(raw_key, origin, KNOWN_KEYS)
    return out


def load_config(path: Path | None = None, start: Path | None = None, section: str = "advise") -> AdviceConfig:
    """Read [tool.rooflinectl] from path, or from the nearest pyproject.toml above start (cwd)."""
    target = path if path is not None else find_pyproject(start or Path.cwd())
    if target is None:
        return AdviceConfig()
    if not target.is_file():
        raise UsageError(f"No config file at {target}.")
    toml = _toml_module()
    if toml is None:
        return AdviceConfig(message=f"not reading {target}: [tool.rooflinectl] needs Python 3.11+ or `pip install tomli`.")
    try:
        data = toml.loads(target.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, toml.TOMLDecodeError) as exc:
        raise UsageError(f"{target} is not valid TOML ({exc}).") from None
    tool = data.get("tool", {})
    if not isinstance(tool, dict):
        raise UsageError(f"{target}: `tool` must be a table ([tool.rooflinectl]), not {type(tool).__name__}.")
    table = tool.get("rooflinectl", {})
    if not isinstance(table, dict):
        raise UsageError(f"{target}: tool.rooflinectl must be a table ([tool.rooflinectl]), not {type(table).__name__}.")
    if not table:
        return AdviceConfig(source=str(target))
    values = _normalise(table, f"{target} [tool.rooflinectl]", SECTIONS)
    for name in SECTIONS:  # every sub-table is checked, whichever command reads it
        sub = _normalise(table.get(name) or {}, f"{target} [tool.rooflinectl.{name}]")
        if name == section:
            values.update(sub)
    return AdviceConfig(values=values, source=str(target))
