"""Measured ceilings cached per machine: GPU by (device UUID, driver, torch), CPU by (model, threads, torch).

Location: $ROOFLINECTL_CACHE_DIR, else $XDG_CACHE_HOME/rooflinectl, else ~/.cache/rooflinectl
(%LOCALAPPDATA%\\rooflinectl on Windows). Files are JSON, written atomically; an unreadable file
is treated as absent (and said so), never as an error.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from rooflinectl.atomic import atomic_file
from rooflinectl.ceilings.measurement import Measurement
from rooflinectl.schema import CEILINGS_CACHE_FORMAT

CACHE_FORMAT = CEILINGS_CACHE_FORMAT
CACHE_VERSION = 1


def cache_dir() -> Path:
    env = os.environ.get("ROOFLINECTL_CACHE_DIR")
    if env:
        return Path(env)
    if os.name == "nt" and os.environ.get("LOCALAPPDATA"):
        return Path(os.environ["LOCALAPPDATA"]) / "rooflinectl"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rooflinectl"


def cache_key(kind: str, identity: dict[str, Any]) -> str:
    """A stable file stem for one (device kind, identity) pair."""
    text = json.dumps({"kind": kind, **identity}, sort_keys=True, default=str)
    return f"ceilings-{kind}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"


def cache_path(kind: str, identity: dict[str, Any]) -> Path:
    return cache_dir() / f"{cache_key(kind, identity)}.json"


def _entry(data: dict[str, Any], path: Path) -> tuple[list[Measurement], dict[str, Any]] | None:
    """(measurements, header) of a cache file's parsed content, None when it is malformed."""
    try:
        measurements = [Measurement.from_dict(m) for m in data.get("measurements", [])]
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    header = {k: v for k, v in data.items() if k != "measurements"}
    header["path"] = str(path)
    return measurements, header


def load(kind: str, identity: dict[str, Any]) -> tuple[list[Measurement], dict[str, Any]] | None:
    """(measurements, header) from the cache, or None when absent, foreign or unreadable."""
    path = cache_path(kind, identity)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format") != CACHE_FORMAT or data.get("identity") != json.loads(
            json.dumps(identity, default=str)
        ):
            return None
    except (OSError, ValueError, AttributeError):
        return None
    return _entry(data, path)


def load_same_model(kind: str, identity: dict[str, Any], device_name: str) -> tuple[list[Measurement], dict[str, Any]] | None:
    """A measurement of another device of the same model (name), driver and torch on this
    machine: the newest such cache file, or None."""
    found: list[tuple[str, str, dict[str, Any]]] = []
    for path in cache_dir().glob(f"ceilings-{kind}-*.json"):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            other = data.get("identity") or {}
            same = (data.get("format") == CACHE_FORMAT and (data.get("device") or {}).get("name") == device_name
                    and all(other.get(k) == identity.get(k) for k in identity if k != "uuid"))
        except (OSError, ValueError, AttributeError):
            continue
        if same:
            found.append((str(data.get("measured_at", "")), str(path), data))  # read once: the data is kept
    if not found:
        return None
    _, path, data = max(found, key=lambda f: (f[0], f[1]))
    return _entry(data, Path(path))


def store(kind: str, identity: dict[str, Any], measurements: list[Measurement], *,
          measured_at: str, extra: dict[str, Any] | None = None) -> Path:
    """Write the cache file atomically (temp file + rename); returns its path."""
    path = cache_path(kind, identity)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "format": CACHE_FORMAT,
        "version": CACHE_VERSION,
        "identity": identity,
        "measured_at": measured_at,
        **(extra or {}),
        "measurements": [m.to_dict() for m in measurements],
    }
    with atomic_file(path) as fh:
        json.dump(payload, fh, indent=1, default=str)
    return path
