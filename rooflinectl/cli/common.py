"""Small helpers the subcommands share."""

from __future__ import annotations

from rich.console import Console

from rooflinectl.outputs.profile_file import DEFAULT_PROFILE_PATH, load_profile
from rooflinectl.profile_model import ProfileData


def console() -> Console:
    """A console that does not wrap tables into nothing in narrow pipes."""
    return Console(width=None if Console().is_terminal else 200)


def load_or_default(path: str | None) -> ProfileData:
    return load_profile(path or DEFAULT_PROFILE_PATH)
