"""Which profile files a command reads: one file, or the rank profiles of a distributed job given
as a folder (its *.rank*.json files), a glob (quoted, or expanded by the shell) or a list; a set is merged (analysis/ranks.py).

With no argument the default file is read; where it is absent and this folder holds rank files
(rooflinectl.profile.rank*.json, what `torchrun ... -m rooflinectl profile` writes by default),
those are read as the set.
"""

from __future__ import annotations

import glob
from pathlib import Path

from rooflinectl.analysis.ranks import merge_ranks
from rooflinectl.errors import ProfileFileError, UsageError
from rooflinectl.outputs.profile_file import DEFAULT_PROFILE_PATH, load_profile
from rooflinectl.profile_model import ProfileData

DEFAULT_RANK_GLOB = "rooflinectl.profile.rank*.json"
FOLDER_RANK_GLOB = "*.rank*.json"  # capture/run/distributed.rank_output_path: `.rank<R>` before the suffix
_GLOB_CHARS = set("*?[")


def expand(arguments: tuple[str, ...] | list[str]) -> list[Path]:
    """Files named by the arguments: a folder gives its rank files (*.rank*.json), a glob its matches (sorted)."""
    paths: list[Path] = []
    for arg in arguments:
        p = Path(arg)
        if p.is_dir():  # only the rank files: a job's folder also holds configs, results, other JSON
            found = sorted(p.glob(FOLDER_RANK_GLOB))
            if not found:
                raise UsageError(f"{arg} is a folder without rank profiles ({FOLDER_RANK_GLOB}, the files a "
                                 "distributed `profile` writes); name the profile file, or give a glob.")
            paths += found
        elif _GLOB_CHARS & set(arg) and not p.exists():
            found = sorted(Path(m) for m in glob.glob(arg))
            if not found:
                raise UsageError(f"No file matches {arg}.")
            paths += found
        else:
            paths.append(p)
    return paths


def default_paths() -> list[Path]:
    """The default profile, else this folder's rank files, else the default (to say it is missing)."""
    if Path(DEFAULT_PROFILE_PATH).exists():
        return [Path(DEFAULT_PROFILE_PATH)]
    ranks = sorted(Path(m) for m in glob.glob(DEFAULT_RANK_GLOB))
    return ranks or [Path(DEFAULT_PROFILE_PATH)]


def rank_set_problem(profiles: list[ProfileData]) -> str | None:
    """Why these profiles are not the ranks of one job (None when they are)."""
    ranks = [p.metadata.get("rank") for p in profiles]
    worlds = {p.metadata.get("world_size") for p in profiles}
    if any(r is None for r in ranks):
        return "not every file is the profile of a rank (no rank in its metadata)"
    if len(worlds) != 1:
        return f"they come from jobs of different sizes ({', '.join(sorted(str(w) for w in worlds))} ranks)"
    duplicates = sorted({r for r in ranks if ranks.count(r) > 1})
    if duplicates:
        return f"rank {duplicates[0]} appears twice"
    return None


def load_profiles(paths: list[Path]) -> tuple[ProfileData, list[str]]:
    """One profile, or the merged profile of a rank set; with the notes to tell the user."""
    return merge_loaded([load_profile(p) for p in paths], paths)


def merge_loaded(profiles: list[ProfileData], paths: list[Path]) -> tuple[ProfileData, list[str]]:
    """load_profiles for profiles already read (paths: theirs, in order)."""
    if len(profiles) == 1:
        return profiles[0], []
    problem = rank_set_problem(profiles)
    if problem is not None:
        raise ProfileFileError(f"{len(paths)} profiles given, but {problem}: give one profile, or the rank "
                               "profiles of one job (a folder, a glob or a list).")
    merged = merge_ranks(profiles, [str(p) for p in paths])
    missing = merged.summary["distributed"]["missing_ranks"]
    notes = [f"merged {len(paths)} rank profiles" + (f"; missing ranks: {', '.join(map(str, missing))}" if missing else "")]
    return merged, notes


def load_arguments(arguments: tuple[str, ...] | list[str]) -> tuple[ProfileData, list[str]]:
    """The profile (or merged rank set) the arguments name; the default one without arguments."""
    return load_profiles(expand(arguments) if arguments else default_paths())


def load_arguments_paths(arguments: tuple[str, ...] | list[str]) -> tuple[ProfileData, list[str], list[Path]]:
    """load_arguments, with the files it read (the default ones without arguments)."""
    paths = expand(arguments) if arguments else default_paths()
    data, notes = load_profiles(paths)
    return data, notes, paths
