"""The default profile is never replaced silently: before `profile` or `analyse` write
rooflinectl.profile.json over an earlier one, that one is kept as rooflinectl.profile.prev.json
(one generation), so `rooflinectl diff` with no arguments compares the two. A profile written to a
name of the user's own choosing (-o) is replaced as asked, not kept."""

from __future__ import annotations

import os
import shutil
from contextlib import suppress
from pathlib import Path

from rooflinectl.schema import DEFAULT_PROFILE_PATH

PREVIOUS_PROFILE_PATH = "rooflinectl.profile.prev.json"


def previous_path(target: Path) -> Path | None:
    """Where the profile at target is kept before it is replaced: beside it, for the default name."""
    return target.with_name(PREVIOUS_PROFILE_PATH) if target.name == Path(DEFAULT_PROFILE_PATH).name else None


def keep_previous(target: Path) -> Path | None:
    """Keep the profile at target (the default name only) as the previous one; the path kept, or
    None when there was nothing to keep. The current file stays in place until it is replaced
    (a hard link, else a copy, renamed over the previous one: never half a file)."""
    previous = previous_path(target)
    if previous is None or not target.is_file():
        return None
    spare = previous.with_name(f".{previous.name}.{os.getpid()}.tmp")
    try:
        try:
            os.link(target, spare)
        except OSError:
            shutil.copy2(target, spare)
        os.replace(spare, previous)
    except OSError:
        with suppress(OSError):
            spare.unlink()
        return None
    return previous
