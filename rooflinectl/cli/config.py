"""CI settings from [tool.rooflinectl] in pyproject.toml (flags given on the command line win).

Keys (either spelling, `min-efficiency` or `min_efficiency`), flat under [tool.rooflinectl] or in
its [tool.rooflinectl.advise] / [tool.rooflinectl.diff] sub-tables:
  fail_on = "warning"            # info | warning | error
  min_efficiency = 0.3           # gate.min-efficiency
  max_unknown_share = 0.2        # gate.unknown-share
  max_launch_overhead = 0.3      # gate.launch-overhead
  min_saving_share = 0.01        # findings saving less become info
  max_findings_per_rule = 5
  disable = ["roof.stop-here"]   # rule ids not to run
  fail_on_regression = 5.0       # diff: percent
Other keys are left alone (other commands read the same table).

Reading the file is input parsing at the edge, so it lives with the commands that read it
(`advise`, `diff`); the advice rules (analysis) receive plain Thresholds and never read files.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rooflinectl.analysis.advice.registry import SEVERITIES
from rooflinectl.errors import UsageError

_FLOAT_KEYS = ("min_efficiency", "max_unknown_share", "max_launch_overhead", "min_saving_share", "fail_on_regression")


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


def _normalise(table: dict[str, Any], origin: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for raw_key, value in table.items():
        if isinstance(value, dict):
            continue
        key = raw_key.replace("-", "_")
        if key in _FLOAT_KEYS:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise UsageError(f"{origin}: {raw_key} must be a number, not {value!r}.")
            out[key] = float(value)
        elif key == "fail_on":
            if value not in SEVERITIES:
                raise UsageError(f"{origin}: fail_on must be one of {', '.join(SEVERITIES)}, not {value!r}.")
            out[key] = value
        elif key == "max_findings_per_rule":
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise UsageError(f"{origin}: max_findings_per_rule must be a positive integer.")
            out[key] = value
        elif key == "disable":
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise UsageError(f"{origin}: disable must be a list of rule ids.")
            out[key] = tuple(value)
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
    table = data.get("tool", {}).get("rooflinectl", {})
    if not isinstance(table, dict) or not table:
        return AdviceConfig(source=str(target))
    values = _normalise(table, str(target))
    sub = table.get(section)
    if isinstance(sub, dict):
        values.update(_normalise(sub, f"{target} [tool.rooflinectl.{section}]"))
    return AdviceConfig(values=values, source=str(target))
