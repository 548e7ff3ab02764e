"""Hard exits during a profiled run: save what ran before the process goes.

`os._exit(n)` and the default action of SIGTERM end the process without unwinding, so neither
our `finally` blocks nor a message would run: the profile of what ran was lost without a word.
While a run is profiled:
- os._exit(n), called in this process (not in a forked child), first calls `save(n, what)`,
  then exits as asked;
- SIGTERM, when the script has not installed its own handler, calls `save(143, "SIGTERM")`,
  then restores the default action and sends itself SIGTERM again, so the process ends as it
  would have (killed by SIGTERM: status 143 in a shell).
The user's program sees no difference but the time the save takes.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress

SaveOnExit = Callable[[int, str], None]


@contextmanager
def saving_on_hard_exit(save: SaveOnExit | None) -> Iterator[None]:
    """Within the block, os._exit and SIGTERM call save(exit_code, what) first (at most once)."""
    if save is None:
        yield
        return
    pid = os.getpid()
    real_exit = os._exit
    done = threading.Lock()

    def save_once(code: int, what: str) -> None:
        if os.getpid() == pid and done.acquire(blocking=False):
            with suppress(Exception):  # the process is going anyway: never fail the exit itself
                save(code, what)

    def exit_hook(code: int) -> None:
        save_once(code, f"os._exit({code})")
        real_exit(code)

    def on_sigterm(signum: int, _frame: object) -> None:
        save_once(128 + signum, "SIGTERM")
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    in_main_thread = threading.current_thread() is threading.main_thread()
    takes_sigterm = in_main_thread and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    os._exit = exit_hook
    if takes_sigterm:
        signal.signal(signal.SIGTERM, on_sigterm)
    try:
        yield
    finally:
        os._exit = real_exit
        if takes_sigterm and signal.getsignal(signal.SIGTERM) is on_sigterm:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
