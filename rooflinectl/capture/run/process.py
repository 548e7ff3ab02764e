"""What the profiling sessions of one process share, and what must outlive them until it exits.

Two facts belong to the process, not to a session or a run, so they are held here, by the one
record made at import (THIS_PROCESS); sessions and runs hold no other state beyond their own:
- how many profiling sessions it has started: kineto may detach CUPTI at a session's stop only
  in the process's first (session._cupti_torn_down_after_stop says why);
- what a user's script left (its globals; when it raised, its exception with the frames that
  hold them), kept until the interpreter exits, as `python script.py` keeps them. Freed earlier,
  when run_path returns, a DDP model's Reducer and its ProcessGroupGloo die on the main thread
  holding the GIL; the destructor joins gloo's threads, one of which frees an AsyncWork whose
  propagated thread-local state holds a Python object (autograd's backward stashes a
  contextvars copy there, torch/autograd/graph.py _engine_run_backward) and waits for the GIL:
  a deadlock (issue 36, 4 runs in 10). At interpreter exit those threads are let go, as for any
  Python program (docs/robustness.md, "DDP teardown").
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ProcessRecord:
    """The process's profiling sessions counted, and the objects it keeps until it exits."""

    sessions_started: int = 0
    kept_until_exit: list[object] = field(default_factory=list, repr=False)

    def session_started(self) -> bool:
        """Count a session that starts; True when it is the first of this process."""
        self.sessions_started += 1
        return self.sessions_started == 1

    def keep_until_exit(self, value: object) -> None:
        """Hold value until the interpreter exits (never freed by us)."""
        self.kept_until_exit.append(value)


THIS_PROCESS = ProcessRecord()
