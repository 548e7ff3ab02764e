"""Reading and writing the profile file: data only (JSON), versioned, written atomically.

Layout (schema_version 1):
  {"format": "rooflinectl-profile", "schema_version": 1,
   "metadata": {...},      # tool/library versions, command, device, completed, clocks, ...
   "ceilings": {...},      # Ceilings.to_dict(): the roofs used, each with its source
   "summary": {...},       # whole-run figures: kernel time, GPU idle time, unknown share, ...
   "kernels": {"columns": [...], "rows": [[...], ...]},
   "setup_kernels": {"columns": [...], "rows": [...]}}  # optional: work outside the steady state
Loading never runs code: json.load and a DataFrame built from lists.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import shlex
from pathlib import Path
from typing import Any

import pandas as pd

from rooflinectl.analysis.json_values import json_ready
from rooflinectl.atomic import write_atomic
from rooflinectl.ceilings.model import Ceilings
from rooflinectl.errors import ProfileFileError
from rooflinectl.outputs.profile_checks import (
    check_ceilings,
    check_kernels,
    check_metadata,
    check_sections,
    check_summary,
)
from rooflinectl.profile_model import ProfileData
from rooflinectl.schema import (
    CAPTURE_FORMAT_NAME,
    DEFAULT_PROFILE_PATH,
    FORMAT_NAME,
    KERNEL_COLUMNS,
    LATER_COLUMNS,
    SCHEMA_VERSION,
)

__all__ = ["DEFAULT_PROFILE_PATH", "FORMAT_NAME", "load_profile", "profile_json", "save_profile", "to_json_dict"]


def _table_dict(table: pd.DataFrame) -> dict[str, Any]:
    return {"columns": list(table.columns), "rows": list(table.itertuples(index=False, name=None))}


def to_json_dict(data: ProfileData) -> dict[str, Any]:
    """The profile file's document: plain JSON values throughout (NaN and inf as null)."""
    out = {
        "format": FORMAT_NAME,
        "schema_version": SCHEMA_VERSION,
        "metadata": data.metadata,
        "ceilings": data.ceilings.to_dict(),
        "summary": data.summary,
        "kernels": _table_dict(data.kernels),
    }
    if data.setup_kernels is not None and len(data.setup_kernels):
        out["setup_kernels"] = _table_dict(data.setup_kernels)
    return json_ready(out)


def profile_json(data: ProfileData) -> str:
    """The profile file's text (what save_profile writes, and `profile -o -` prints)."""
    return json.dumps(to_json_dict(data), indent=1, allow_nan=False)


def save_profile(data: ProfileData, path: str | os.PathLike[str]) -> None:
    write_atomic(path, profile_json(data))


# The largest profile file read (a 1,000,000-launch capture's profile is about 100 MB): more is
# not a profile, and /dev/zero or an endless pipe must not be read until memory runs out.
MAX_PROFILE_BYTES = 1 << 30


def _read_bounded(p: Path) -> str:
    """The file's text, refusing a device node and anything over MAX_PROFILE_BYTES."""
    if p.is_char_device() or p.is_block_device():
        raise ProfileFileError(f"{p} is a device, not a profile file.")
    with p.open("rb") as handle:
        raw = handle.read(MAX_PROFILE_BYTES + 1)
    if raw[:2] == b"\x1f\x8b":  # a gzipped profile (or trace): its text, bounded the same way
        with gzip.GzipFile(fileobj=io.BytesIO(raw)) as unpacked:
            raw = unpacked.read(MAX_PROFILE_BYTES + 1)
    if len(raw) > MAX_PROFILE_BYTES:
        raise ProfileFileError(f"{p} is larger than {MAX_PROFILE_BYTES >> 20} MiB: not a rooflinectl profile.")
    return raw.decode("utf-8")


def _parse(p: Path) -> Any:
    """The JSON document, or one sentence: unreadable, not UTF-8, not JSON, an integer of more
    digits than Python converts (4300), or nesting deeper than the parser's recursion."""
    try:
        return json.loads(_read_bounded(p))
    except (OSError, EOFError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProfileFileError(f"{p} is not a readable rooflinectl profile ({exc.__class__.__name__}).") from None
    except ValueError as exc:  # int('9' * 5000): the digit limit
        raise ProfileFileError(f"{p} is not a rooflinectl profile: it holds a number too long to read ({exc}).") from None
    except RecursionError:
        raise ProfileFileError(f"{p} is not a rooflinectl profile: its JSON is nested too deeply.") from None


def _version_problem(version: object) -> str | None:
    """Why this schema_version cannot be read (None when it can); a string "1" is not the number 1."""
    if type(version) is int and version == SCHEMA_VERSION:
        return None
    if isinstance(version, str):
        return f"its schema_version is the string {version!r}, not a number; this rooflinectl reads version {SCHEMA_VERSION}"
    return f"it has profile schema version {version!r}; this rooflinectl reads version {SCHEMA_VERSION}"


def load_profile(path: str | os.PathLike[str]) -> ProfileData:
    """Load a profile file; any problem becomes one ProfileFileError sentence."""
    p = Path(path)
    if not p.exists():
        raise ProfileFileError(f"No profile file at {p}; run `rooflinectl profile SCRIPT` first.")
    raw = _parse(p)
    if not isinstance(raw, dict) or raw.get("format") != FORMAT_NAME:
        raise ProfileFileError(_not_a_profile(p, raw))
    problem = _version_problem(raw.get("schema_version"))
    if problem is not None:
        raise ProfileFileError(f"{p}: {problem}.")
    check_sections(raw, str(p))
    check_ceilings(raw, str(p))
    summary = raw.get("summary") or {}
    check_summary(summary, str(p))
    check_metadata(raw.get("metadata") or {}, str(p))
    try:
        table = raw["kernels"]
        kernels = pd.DataFrame(table["rows"], columns=table["columns"])
        setup = raw.get("setup_kernels")
        setup_kernels = pd.DataFrame(setup["rows"], columns=setup["columns"]) if setup is not None else None
        ceilings = Ceilings.from_dict(raw["ceilings"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ProfileFileError(f"{p} is a damaged rooflinectl profile (missing {exc}).") from None
    check_kernels(kernels, str(p))
    if setup_kernels is not None:
        check_kernels(setup_kernels, f"{p} (setup table)")
    return ProfileData(kernels=_coerce_types(kernels), ceilings=ceilings, metadata=raw.get("metadata") or {},
                       summary=summary,
                       setup_kernels=_coerce_types(setup_kernels) if setup_kernels is not None else None)


def _not_a_profile(p: Path, raw: Any) -> str:
    """The sentence for a JSON file that is not a profile; a trace or a capture file, which users
    hand to show/plot/advise by mistake, is named with the command that reads it."""
    kind = None
    if isinstance(raw, dict) and "traceEvents" in raw:
        kind = "a torch.profiler trace"
    elif isinstance(raw, dict) and (raw.get("format") == CAPTURE_FORMAT_NAME or "device_kind" in raw):
        kind = "a --save-capture file"
    if kind is None:
        return f"{p} is not a rooflinectl profile file."
    return f"{p} is {kind}, not a profile: build one with `rooflinectl analyse {shlex.quote(str(p))}`."


def _coerce_types(kernels: pd.DataFrame) -> pd.DataFrame:
    """JSON null -> NaN for float columns, so arithmetic on a loaded table behaves as on a fresh one;
    columns added since the file was written (LATER_COLUMNS) with their empty values."""
    for name, empty in LATER_COLUMNS.items():
        if name not in kernels.columns:
            kernels[name] = empty
    for name, (kind, _) in KERNEL_COLUMNS.items():
        if name not in kernels.columns:
            continue
        if kind == "float":
            kernels[name] = pd.to_numeric(kernels[name], errors="coerce").astype(float)
        elif kind == "int":
            kernels[name] = pd.to_numeric(kernels[name], errors="coerce").fillna(0).astype(int)
        elif kind == "bool":
            kernels[name] = kernels[name].fillna(False).astype(bool)
        else:
            kernels[name] = kernels[name].fillna("").astype(str)
    return kernels
