"""What `rooflinectl profile` writes once the run is over (or cut short), and what it says.

Rules (README "Script mode"):
- a run that recorded nothing (the script failed before any kernel ran, or did not compile)
  writes no profile: a good profile at the same path is never replaced by an empty one;
- a failure to write after the run saves the profile to a fallback path and says where;
- a hard exit (os._exit, SIGTERM) saves the partial profile before the process goes.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import click
import pandas as pd

from rooflinectl.capture.run.session import Capture
from rooflinectl.errors import EXIT_USAGE
from rooflinectl.outputs.output_paths import fallback_path
from rooflinectl.outputs.profile_file import profile_json, save_profile
from rooflinectl.outputs.profile_previous import keep_previous
from rooflinectl.pipeline import build_profile
from rooflinectl.profile_model import ProfileData


@dataclass
class ProfileWriter:
    """The checked output path (absolute, resolved before the run) and how to name it."""

    target: Path | None  # None: standard output
    shown: str  # the path as the user gave it, for messages
    command: list[str]
    iterations_mode: str = "auto"  # profile --iterations
    stdout: TextIO | None = None  # the real standard output while the script's goes to stderr (-o -)
    # the pipeline's build step (profiling.ProfilePipeline.build_capture); unset: pipeline.build_profile
    builder: Callable[..., tuple[ProfileData, pd.DataFrame]] | None = None
    saved: bool = False  # written once: a second save (counters) keeps no earlier version of this run

    def build(self, capture: Capture, *, completed: bool, exit_code: int) -> tuple[ProfileData, pd.DataFrame] | None:
        """The profile and its attributed launches (pipeline.build_profile), or None when the run
        recorded nothing (said on stderr)."""
        if capture.trace is None:
            self._nothing("the run ended before the profiler recorded anything: the script did not compile, "
                          "or the function or its file raised")
            return None
        if self.builder is not None:
            data, launches = self.builder(capture, completed=completed, exit_code=exit_code)
        else:
            data, launches = build_profile(capture, command=self.command, completed=completed, exit_code=exit_code,
                                           iterations_mode=self.iterations_mode)
        if not data.summary.get("launches"):  # a sys.exit(0) before any op too: never an empty profile
            self._nothing("the script failed before any kernel ran" if not completed else "the script ran no op")
            return None
        return data, launches

    def _nothing(self, why: str) -> None:
        kept = f"; {self.shown} is left as it was" if self.target is not None and self.target.exists() else ""
        click.echo(f"rooflinectl: nothing was recorded ({why}): no profile written{kept}.", err=True)

    def save(self, data: ProfileData, *, completed: bool) -> tuple[int, str]:
        """Write the profile (falling back to a temp path); returns the exit status (0, or
        EXIT_USAGE when the profile could not go where it was asked) and the line to print."""
        note = "" if completed else " (incomplete run)"
        if self.target is None:
            stream = self.stdout or sys.stdout
            stream.write(profile_json(data) + "\n")
            stream.flush()
            return 0, f"profile written to standard output{note}"
        kept = keep_previous(self.target) if not self.saved else None  # outputs/profile_previous.py
        try:
            save_profile(data, self.target)
            self.saved = True
        except OSError as exc:
            spare = fallback_path(self.target.name)
            save_profile(data, spare)
            return EXIT_USAGE, (f"rooflinectl: could not write {self.shown} ({exc.strerror or exc}); "
                                f"the profile{note} is saved at {spare} instead.")
        return 0, f"profile written to {self.shown}{note}" + (f" (the previous one: {kept.name})" if kept else "")

    def save_on_hard_exit(self, capture: Capture | None, exit_code: int, what: str) -> None:
        """Called just before os._exit or SIGTERM ends the process (capture/run/hard_exit.py) with
        the finished capture of the session that was recording (runner.HardExitWatch), or None."""
        if capture is None:
            click.echo(f"rooflinectl: the script ended by {what} before profiling began: no profile written.", err=True)
            return
        click.echo(f"rooflinectl: the script ended by {what}; saving what ran.", err=True)
        built = self.build(capture, completed=False, exit_code=exit_code)
        if built is not None:
            click.echo(self.save(built[0], completed=False)[1], err=True)
        sys.stderr.flush()
