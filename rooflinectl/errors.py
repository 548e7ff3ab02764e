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
     that is incomplete or whose numbers cannot be judged: its run failed, it recorded no
     kernels, it has no summary, its times are all zero or its costs all unknown; no gate passes
  6  an output could not be written: the disk is full, a file size limit (`ulimit -f`) or a
     quota was reached; nothing half-written is left
  A profiled script that fails keeps its own exit code.

Every message of this hierarchy is made printable when it is built (`printable`): a name read
from a file cannot move the terminal's cursor, start a CI workflow command on a line of its own
(`::error::`, `::add-mask::`), reverse the text around it or crash an ASCII terminal.
"""

from __future__ import annotations

import errno
import re

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_ENVIRONMENT = 3
EXIT_COUNTERS = 4
EXIT_INCOMPLETE = 5
EXIT_WRITE = 6

# C0 and C1 controls (escape sequences, newlines, bells), the bidirectional overrides and isolates
# (a right-to-left override reverses what follows it on screen), lone surrogates (valid in JSON as
# "\ud800", unencodable in UTF-8) and the non-characters U+FFFE/U+FFFF (not allowed in XML).
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
                          "\ud800-\udfff\ufdd0-\ufdef\ufffe\uffff]")
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _visible(match: re.Match[str]) -> str:
    char = match.group(0)
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def printable(value: object) -> str:
    """The one escape of text from outside (a file, a trace, a script): every character above
    shown as its escape (\\x1b, \\n, \\u202e, \\ud800), so it is one safe line for a terminal, a CI
    log, XML and any UTF-8 file."""
    return _UNPRINTABLE.sub(_visible, str(value))


class RooflineError(Exception):
    """Base class: a message meant for the user and the exit code that goes with it. The message
    is printable() from the start, whatever file text it quotes."""

    exit_code = EXIT_USAGE

    def __init__(self, *args: object) -> None:
        super().__init__(*(printable(a) if isinstance(a, str) else a for a in args))

    def __str__(self) -> str:
        return printable(Exception.__str__(self))  # the message, also on an OSError subclass


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


class OutputWriteError(RooflineError, OSError):
    """An output could not be written for want of room: a full disk, a file size limit, a quota.
    An OSError too, so a caller that falls back on another path for any OSError still does."""

    exit_code = EXIT_WRITE


# errno values that mean "no room to write", not "cannot write here"
NO_ROOM = frozenset({errno.ENOSPC, errno.EFBIG, getattr(errno, "EDQUOT", errno.ENOSPC)})


def no_room_error(exc: OSError, target: object) -> OutputWriteError:
    """The one sentence for an output that ran out of room (exc.errno in NO_ROOM)."""
    why = {errno.ENOSPC: "the disk is full", errno.EFBIG: "the file size limit (ulimit -f) was reached"}.get(
        exc.errno or 0, "the disk quota was reached")
    error = OutputWriteError(f"Could not write {target}: {why}; nothing was written there.")
    error.errno, error.strerror, error.filename = exc.errno, exc.strerror, str(target)
    return error
