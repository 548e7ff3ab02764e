"""What a roofline test leaves behind: one record per `roofline(...)` call, as JUnit properties,
as baseline entries, and the comparison of a run against a saved baseline.

Light on purpose (standard library only): the plugin imports it at pytest start-up.
A record's figures are per call of the profiled function (see result.py):
efficiency (time-weighted, of the roofs), time_s (its kernels' time, profiled),
unprofiled_time_s (the call timed without the profiler), bytes, min_bytes and flops.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from rooflinectl.schema import PYTEST_BASELINE_FORMAT  # constants only: light

PROPERTY = re.compile(r"^roofline(\d*)\.(\w+)$")  # "roofline.efficiency", "roofline2.time_s", ...
FIELDS = ("label", "kernel", "efficiency", "bound", "time_s", "unprofiled_time_s", "bytes", "min_bytes", "flops",
          "device", "device_kind", "ceilings", "above_roof", "change", "regressions")
SAVED = FIELDS[:-2]  # a baseline keeps the figures, not the comparison of the run that saved them
COMPARED = ("efficiency", "time_s")  # what a regression is judged on, as pytest-benchmark judges its times
BASELINE_FORMAT = PYTEST_BASELINE_FORMAT
BASELINE_DIR = Path(".rooflinectl") / "baselines"  # under the rootdir: committable, kept by --cache-clear


def properties(record: dict[str, Any], call: int) -> list[tuple[str, Any]]:
    """The JUnit properties of the call-th roofline call of a test (1: "roofline.x", 2: "roofline2.x")."""
    prefix = "roofline" if call == 1 else f"roofline{call}"
    return [(f"{prefix}.{name}", record.get(name)) for name in FIELDS]


def from_properties(user_properties: list[tuple[str, Any]]) -> list[dict[str, Any]]:
    """The records a test's properties hold, in call order (what a report carries back from an
    xdist worker as well as from this process)."""
    calls: dict[int, dict[str, Any]] = {}
    for name, value in user_properties:
        match = PROPERTY.match(str(name))
        if match:
            calls.setdefault(int(match.group(1) or 1), {})[match.group(2)] = value
    return [calls[k] for k in sorted(calls)]


def parse_threshold(text: str) -> float:
    """'5%' or '5' -> 0.05. Refuses what cannot be a threshold (NaN, inf, negative) with one sentence."""
    raw = text.strip().removesuffix("%").strip()
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"the regression threshold must be a finite percentage of 0 or more, such as 5%: got {text!r}")
    return value / 100.0


def baseline_path(name: str, rootdir: Path) -> Path:
    """A NAME is stored as <rootdir>/.rooflinectl/baselines/NAME.json; a name ending in .json, or
    holding a folder, is a path of its own."""
    if name.endswith(".json") or "/" in name or "\\" in name:
        return Path(name)
    if not re.fullmatch(r"[\w.-]+", name):
        raise ValueError(f"baseline name {name!r}: use letters, digits, '.', '_' and '-' (or a path ending in .json)")
    return rootdir / BASELINE_DIR / f"{name}.json"


def load_baseline(path: Path) -> dict[str, list[dict[str, Any]]]:
    """test id -> its records, from a baseline file; ValueError with one sentence when it cannot be read."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"no roofline baseline at {path}: save one first with --roofline-save") from None
    except (OSError, ValueError) as exc:
        raise ValueError(f"the roofline baseline {path} cannot be read: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != BASELINE_FORMAT or not isinstance(data.get("tests"), dict):
        raise ValueError(f"{path} is not a rooflinectl pytest baseline (format {BASELINE_FORMAT!r})")
    return data["tests"]


def merged_baseline(path: Path, tests: dict[str, list[dict[str, Any]]], meta: dict[str, Any]) -> dict[str, Any]:
    """The baseline to write: the tests of this run replace theirs; tests that did not run (-k, --lf)
    keep the entries they had."""
    try:
        kept = load_baseline(path) if path.exists() else {}
    except ValueError:
        kept = {}
    return {"format": BASELINE_FORMAT, "version": 1, **meta, "tests": {**kept, **tests}}


def save_baseline(path: Path, rows: list[dict[str, Any]], meta: dict[str, Any]) -> int:
    """Write the measured rows as a baseline (merged with the tests it already holds), atomically;
    returns how many tests this run stored."""
    from rooflinectl.atomic import atomic_file

    tests: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        tests.setdefault(row["test"], []).append({k: row.get(k) for k in SAVED})
    path.parent.mkdir(parents=True, exist_ok=True)
    data = merged_baseline(path, tests, meta)
    with atomic_file(path) as fh:
        json.dump(data, fh, indent=1)
        fh.write("\n")
    return len(tests)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


def regressions(record: dict[str, Any], saved: dict[str, Any] | None, threshold: float) -> list[str]:
    """One sentence per figure that regressed beyond threshold (a fraction) against the saved record:
    efficiency fell below saved x (1 - threshold), or time rose above saved x (1 + threshold)."""
    if not saved:
        return []
    out = []
    eff, eff_saved = _number(record.get("efficiency")), _number(saved.get("efficiency"))
    if eff_saved is not None and (eff is None or eff < eff_saved * (1 - threshold)):
        now = f"{eff:.1%}" if eff is not None else "unknown"
        out.append(f"efficiency regressed: {now} of roof, baseline {eff_saved:.1%} (allowed -{threshold:.1%})")
    t, t_saved = _number(record.get("time_s")), _number(saved.get("time_s"))
    if t_saved is not None and t is not None and t > t_saved * (1 + threshold):
        out.append(f"time regressed: {t * 1e6:.4g} us per call, baseline {t_saved * 1e6:.4g} us "
                   f"(+{t / t_saved - 1:.1%}, allowed +{threshold:.1%})")
    return out


def change(record: dict[str, Any], saved: dict[str, Any] | None) -> str:
    """'eff -12.0%, time +30.1%' against the saved record ('' without one): the summary's column."""
    if not saved:
        return ""
    parts = []
    for name, short in (("efficiency", "eff"), ("time_s", "time")):
        now, then = _number(record.get(name)), _number(saved.get(name))
        if now is not None and then:
            parts.append(f"{short} {now / then - 1:+.1%}")
    return ", ".join(parts)
