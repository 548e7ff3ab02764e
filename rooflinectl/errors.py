"""One exception hierarchy; the CLI turns each into one sentence and a documented exit code.

Exit codes (also in the README):
  0  success
  1  findings at or above --fail-on (advise), regression (diff)
  2  usage or input error: missing script, bad file:function, unreadable or foreign profile
  3  environment error: something the machine lacks (CUDA, NVML, triton, ncu, permission to read
     GPU counters) that the command needs
  4  `profile --counters ncu`: the counters could not be read or joined (replay timeout, the
     program failed or launched other kernels under ncu); the analytic profile is still written
  5  a gate (advise --fail-on or a threshold, diff --fail-on-regression) was asked on a profile
     that is incomplete: its run failed, or it recorded no kernels; no gate passes on it
  A profiled script that fails keeps its own exit code.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_ENVIRONMENT = 3
EXIT_COUNTERS = 4
EXIT_INCOMPLETE = 5


class RooflineError(Exception):
    """Base class: a message meant for the user and the exit code that goes with it."""

    exit_code = EXIT_USAGE


class UsageError(RooflineError):
    """The user asked for something that cannot be done as asked (bad target, bad option)."""

    exit_code = EXIT_USAGE


class ProfileFileError(RooflineError):
    """A profile file is missing, unreadable, foreign or of an unknown schema version."""

    exit_code = EXIT_USAGE


class EnvironmentProblem(RooflineError):
    """The machine lacks something the command needs (CUDA, NVML, triton, ncu)."""

    exit_code = EXIT_ENVIRONMENT



class CountersProblem(RooflineError):
    """Nsight Compute ran but its counters could not be used (timeout, mismatch, failed run)."""

    exit_code = EXIT_COUNTERS
