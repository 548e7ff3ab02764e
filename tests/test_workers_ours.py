"""Threads and processes that are not the user's work are not counted as work the profiler missed
(issue 35): the status line's refresh thread (rich's, started by our code), the NVML sampler's,
and torch.compile's compile workers; a thread the user starts, directly or through a library
(concurrent.futures), still is."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import torch

from rooflinectl.capture.run.workers import counting_workers


def _counts(body: Any) -> tuple[int, int]:
    counts: dict[str, Any] = {}
    with counting_workers(counts):
        body()
    return counts["threads_started"], counts["processes_started"]


def test_the_users_threads_and_processes_are_counted() -> None:
    def body() -> None:
        t = threading.Thread(target=lambda: None)
        t.start()
        t.join()
        with ThreadPoolExecutor(max_workers=1) as pool:  # started inside concurrent.futures, for the user
            pool.submit(lambda: None).result()
        subprocess.run([sys.executable, "-c", "pass"], check=True)

    assert _counts(body) == (2, 1)


def test_the_status_lines_refresh_thread_is_ours() -> None:
    from rooflinectl.cli.status import StatusLine

    def body() -> None:
        status = StatusLine(enabled=False)
        status.enabled = True  # as on a terminal: rich's Live starts its refresh thread
        status.phase("reading the trace")
        status.stop()

    assert _counts(body) == (0, 0)


def test_the_nvml_samplers_thread_is_ours() -> None:
    """The sampler's own `self._thread.start()` line, run as code of its module (rooflinectl's)."""
    from rooflinectl.capture.run import nvml_sampler

    thread = threading.Thread(target=lambda: None, name="rooflinectl-nvml", daemon=True)
    code = compile("thread.start(); thread.join()", nvml_sampler.__file__, "exec")
    assert _counts(lambda: exec(code, {"thread": thread})) == (0, 0)


def test_compile_workers_are_not_the_users() -> None:
    """A thread and a process started from torch.compile's machinery (Inductor's compile pool),
    called by the user's code: compilation, not missed work."""
    inductor_file = os.path.join(os.path.dirname(torch.__file__), "_inductor", "async_compile.py")
    code = compile("t = threading.Thread(target=lambda: None); t.start(); t.join()\n"
                   "subprocess.run([sys.executable, '-c', 'pass'], check=True)\n", inductor_file, "exec")

    def body() -> None:
        exec(code, {"threading": threading, "subprocess": subprocess, "sys": sys})

    assert _counts(body) == (0, 0)


def test_a_user_folder_named_like_a_library_is_still_the_users(tmp_path: Path) -> None:
    user_file = str(tmp_path / "triton" / "train.py")
    code = compile("t = threading.Thread(target=lambda: None); t.start(); t.join()\n", user_file, "exec")
    assert _counts(lambda: exec(code, {"threading": threading})) == (1, 0)


GPU_SCRIPT = """import torch
x = torch.randn(1024, 1024, device="cuda")
f = torch.compile(lambda a: (a @ a).relu().sum(dim=0))
for _ in range(8):
    y = f(x)
torch.cuda.synchronize()
print("done")
"""


@pytest.mark.gpu
def test_on_a_gpu_nothing_of_ours_or_the_compilers_is_counted(tmp_path: Path) -> None:
    """A compiled CUDA script under the NVML sampler: Inductor's compile workers and our sampler's
    thread are not 'threads the profiler does not follow'."""
    from click.testing import CliRunner

    from rooflinectl.cli.main import main
    from rooflinectl.outputs.profile_file import load_profile

    script = tmp_path / "compiled.py"
    script.write_text(GPU_SCRIPT)
    out = tmp_path / "p.json"
    result = CliRunner().invoke(main, ["profile", str(script), "-o", str(out), "--device", "cuda"])
    assert result.exit_code == 0, result.output
    data = load_profile(out)
    assert (data.metadata["threads_started"], data.metadata["processes_started"]) == (0, 0), result.output
    assert "does not follow" not in result.output
