"""`rooflinectl profile` misused as a new user would (issue 16, cases 1-7 and 14): the user's
files and the last good profile survive, every problem is one sentence, nothing is lost late."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from rooflinectl.cli.main import main
from rooflinectl.errors import EXIT_USAGE
from rooflinectl.outputs.profile_file import load_profile

MATMUL = "import torch\nx = torch.randn(64, 64)\ny = x @ x\n"


def _invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def _script(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


def _subprocess(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """A real process: segfaults, os._exit and signals must not take the test run down."""
    return subprocess.run([sys.executable, "-m", "rooflinectl", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=240)


# case 1 -------------------------------------------------------------------------------------------

def test_output_that_is_the_script_is_refused(tmp_path: Path) -> None:
    script = _script(tmp_path, "s.py", MATMUL)
    result = _invoke("profile", str(script), "-o", str(script), "-q", "--device", "cpu")
    assert result.exit_code == EXIT_USAGE
    assert "is the script being profiled" in result.output
    assert script.read_text() == MATMUL
    forced = _invoke("profile", str(script), "-o", str(script), "-q", "--device", "cpu", "--force")
    assert forced.exit_code == EXIT_USAGE and script.read_text() == MATMUL  # never, even forced


def test_output_that_is_a_source_or_foreign_file_is_refused(tmp_path: Path) -> None:
    script = _script(tmp_path, "s.py", MATMUL)
    other = _script(tmp_path, "other.py", "print('mine')\n")
    result = _invoke("profile", str(script), "-o", str(other), "-q", "--device", "cpu", "--force")
    assert result.exit_code == EXIT_USAGE and "source" in result.output
    assert other.read_text() == "print('mine')\n"
    foreign = tmp_path / "data.json"
    foreign.write_text('{"mine": 1}')
    refused = _invoke("profile", str(script), "-o", str(foreign), "-q", "--device", "cpu")
    assert refused.exit_code == EXIT_USAGE and "--force" in refused.output
    assert foreign.read_text() == '{"mine": 1}'
    forced = _invoke("profile", str(script), "-o", str(foreign), "-q", "--device", "cpu", "--force")
    assert forced.exit_code == 0, forced.output
    again = _invoke("profile", str(script), "-o", str(foreign), "-q", "--device", "cpu")  # ours now
    assert again.exit_code == 0, again.output
    assert load_profile(foreign).metadata["completed"] is True


# case 3 -------------------------------------------------------------------------------------------

def test_relative_output_is_resolved_before_the_script_changes_folder(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    _script(tmp_path, "chd.py", "import os\nos.makedirs('sub', exist_ok=True)\nos.chdir('sub')\n" + MATMUL)
    result = _invoke("profile", "chd.py", "-o", "rel.json", "-q", "--device", "cpu")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "rel.json").is_file()
    assert not (tmp_path / "sub" / "rel.json").exists()


# case 4 -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("make, output", [
    (lambda d: (d / "folder.json").mkdir(), "folder.json"),
    (lambda d: (d / "afile").write_text("x"), "afile/p.json"),
    (lambda d: (d / "afile").write_text("x"), "afile/deeper/p.json"),
    (lambda d: None, "typo/p.json"),  # no folder is made: "the folder ... does not exist"
])
def test_unwritable_output_is_refused_before_the_run(tmp_path: Path, monkeypatch, make, output: str) -> None:
    monkeypatch.chdir(tmp_path)
    make(tmp_path)
    _script(tmp_path, "s.py", "open('ran', 'w').write('yes')\n" + MATMUL)
    result = _invoke("profile", "s.py", "-o", output, "-q", "--device", "cpu")
    assert result.exit_code == EXIT_USAGE
    assert result.output.startswith("rooflinectl: Cannot write") and "Traceback" not in result.output
    assert not (tmp_path / "ran").exists()  # refused before the script ran


@pytest.mark.parametrize("make, report, said", [
    (lambda d: (d / "r.ncu-rep").mkdir(), "r", "Cannot write r.ncu-rep: it is a folder"),
    (lambda d: (d / "afile").write_text("x"), "afile/r.ncu-rep", "Cannot write afile/r.ncu-rep: "),
    (lambda d: (d / "mine.ncu-rep").write_text("x"), "mine", "Refusing to replace mine.ncu-rep"),
    (lambda d: (d / "mine.ncu-rep").write_text("x"), "mine.ncu-rep", "Refusing to replace mine.ncu-rep"),
])
def test_ncu_report_path_is_checked_before_the_run(tmp_path: Path, monkeypatch, make, report: str, said: str) -> None:
    """--ncu-report is checked like -o: before the script runs (not after it and the ncu run), one
    sentence, exit 2, and a file already there is kept (ncu would be told --force-overwrite)."""
    monkeypatch.chdir(tmp_path)
    make(tmp_path)
    _script(tmp_path, "s.py", "open('ran', 'w').write('yes')\n" + MATMUL)
    result = _invoke("profile", "s.py", "-q", "--device", "cpu", "--counters", "ncu", "--ncu-report", report)
    assert result.exit_code == EXIT_USAGE, result.output
    assert result.output.startswith(f"rooflinectl: {said}") and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "ran").exists()  # refused before the script ran
    mine = tmp_path / "mine.ncu-rep"
    assert not mine.is_file() or mine.read_text() == "x"


def test_late_write_failure_saves_to_a_fallback(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out").mkdir()
    _script(tmp_path, "s.py", "import shutil\nshutil.rmtree('out')\nopen('out', 'w').write('x')\n" + MATMUL)
    result = _invoke("profile", "s.py", "-o", "out/p.json", "-q", "--device", "cpu")
    assert result.exit_code == EXIT_USAGE
    assert "could not write out/p.json" in result.output and "Traceback" not in result.output
    spare = Path(result.output.split("saved at ")[1].split(" instead")[0])
    try:
        assert (load_profile(spare).kernels["op"] == "aten::mm").any()
    finally:
        spare.unlink()


# case 5 -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, text, code, message", [
    ("syn.py", "def f(:\n", 1, "SyntaxError"),
    ("README.md", "# Title\nIt's `rooflinectl` here\n", EXIT_USAGE, "is not a Python script"),
    ("imp.py", "import no_such_module_here\n", 1, "ModuleNotFoundError"),
])
def test_a_run_that_recorded_nothing_keeps_the_last_profile(tmp_path: Path, monkeypatch, name: str, text: str,
                                                            code: int, message: str) -> None:
    monkeypatch.chdir(tmp_path)
    _script(tmp_path, "good.py", MATMUL)
    assert _invoke("profile", "good.py", "-q", "--device", "cpu").exit_code == 0
    before = (tmp_path / "rooflinectl.profile.json").read_bytes()
    _script(tmp_path, name, text)
    result = _invoke("profile", name, "-q", "--device", "cpu")
    assert result.exit_code == code
    assert message in result.output
    assert "rooflinectl/" not in result.output and "runpy" not in result.output  # case 14 too
    assert (tmp_path / "rooflinectl.profile.json").read_bytes() == before


# case 6 -------------------------------------------------------------------------------------------

def test_function_that_needs_arguments_says_what_to_add(tmp_path: Path) -> None:
    script = _script(tmp_path, "needargs.py", "def f(x, y):\n    return x @ y\n")
    result = _invoke("profile", f"{script}:f", "-q", "--device", "cpu")
    assert result.exit_code == EXIT_USAGE
    assert "needs arguments (x, y)" in result.output and "make_inputs()" in result.output
    assert "Traceback" not in result.output
    _script(tmp_path, "wrong.py", "def f(x, y):\n    return x @ y\n\ndef make_inputs():\n    return (1,)\n")
    wrong = _invoke("profile", f"{tmp_path / 'wrong.py'}:f", "-q", "--device", "cpu")
    assert wrong.exit_code == EXIT_USAGE and "make_inputs() in" in wrong.output


def test_empty_function_name_is_refused(tmp_path: Path) -> None:
    script = _script(tmp_path, "train_step.py", "open('ran', 'w')\n")
    result = _invoke("profile", f"{script}:", "-q", "--device", "cpu")
    assert result.exit_code == EXIT_USAGE and "names no function" in result.output
    assert not (tmp_path / "ran").exists()


# case 14 ------------------------------------------------------------------------------------------

def test_traceback_is_the_users_for_a_relative_path(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    _script(tmp_path, "fails.py", MATMUL + "raise ValueError('boom')\n")
    result = _invoke("profile", "fails.py", "-q", "--device", "cpu")
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[0] == "Traceback (most recent call last):"
    assert lines[1].startswith('  File "fails.py", line 4')  # the first frame is the user's
    assert "ValueError: boom" in result.output and "runpy" not in result.output


# cases 2 and 7 ---------------------------------------------------------------------

USER_PROFILERS = """
import torch
from torch.profiler import ProfilerActivity, profile, schedule
x = torch.randn(64, 64)
with torch.profiler.profile() as p:            # the context manager
    x @ x
print("table", repr(p.key_averages().table()))
q = profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=2),
            on_trace_ready=lambda pr: pr.export_chrome_trace(f"user_{pr.step_num}.json"))
q.start()                                      # manual start/stop with steps
for _ in range(4):
    x @ x
    q.step()
q.stop()
with torch.autograd.profiler.profile() as r:   # the legacy profiler
    x + x
r.export_chrome_trace("legacy.json")
print("done")
"""


@pytest.mark.slow
def test_script_with_its_own_profiler_cooperates(tmp_path: Path) -> None:
    _script(tmp_path, "own.py", USER_PROFILERS)
    result = _subprocess("profile", "own.py", "-o", "p.json", "-q", "--device", "cpu", "--iterations", "none",
                         cwd=tmp_path)
    assert result.returncode == 0, result.stderr  # was -11 (segfault), no message, no profile
    assert "done" in result.stdout
    assert "USDT" not in result.stderr  # kineto's start/stop lines stay off the screen
    data = load_profile(tmp_path / "p.json")
    assert data.metadata["completed"] is True
    assert data.kernels.loc[data.kernels["op"] == "aten::mm", "calls"].sum() == 5
    # the script's exports are real Chrome traces of the run, with the steps prof.step() marked
    trace = json.loads((tmp_path / "user_4.json").read_text())
    names = {e.get("name") for e in trace["traceEvents"]}
    assert {"ProfilerStep#0", "ProfilerStep#3", "aten::mm"} <= names
    assert "aten::add" in {e.get("name") for e in json.loads((tmp_path / "legacy.json").read_text())["traceEvents"]}


class _ProcessEnded(BaseException):
    """What the stand-ins for os._exit and the re-sent SIGTERM raise, so the test process lives."""


@pytest.mark.parametrize("ending, code", [
    ("signal.raise_signal(signal.SIGTERM)\ntime.sleep(30)\n", 128 + signal.SIGTERM),
    ("os._exit(4)\n", 4),
])
def test_hard_exits_save_the_partial_profile(tmp_path: Path, monkeypatch, capsys, ending: str, code: int) -> None:
    ended: list[tuple[str, int]] = []

    def fake_exit(status: int) -> None:
        ended.append(("exit", status))
        raise _ProcessEnded

    def fake_kill(pid: int, signum: int) -> None:
        ended.append(("kill", signum))
        raise _ProcessEnded

    monkeypatch.setattr(os, "_exit", fake_exit)  # saved by rooflinectl as "the real one", called last
    monkeypatch.setattr(os, "kill", fake_kill)
    monkeypatch.chdir(tmp_path)
    _script(tmp_path, "hard.py", "import os, signal, time\n" + MATMUL + ending)
    with pytest.raises(_ProcessEnded):
        main.main(["profile", "hard.py", "-o", "p.json", "-q", "--device", "cpu"], standalone_mode=False)
    assert ended == ([("kill", signal.SIGTERM)] if code > 128 else [("exit", 4)])  # then it ends as it would
    err = capsys.readouterr().err
    assert "ended by" in err and "profile written to p.json (incomplete run)" in err
    data = load_profile(tmp_path / "p.json")
    assert data.metadata["completed"] is False and data.metadata["exit_code"] == code
    assert (data.kernels["op"] == "aten::mm").any()
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


def test_nested_session_is_refused_in_one_sentence() -> None:
    import torch

    from rooflinectl.capture.run.session import profiling
    from rooflinectl.errors import UsageError

    with torch.profiler.profile(), pytest.raises(UsageError, match="already running"):  # noqa: SIM117
        with profiling("cpu"):
            pass


# case 13 ------------------------------------------------------------------------------------------

def test_threads_and_children_that_are_not_followed_are_said(tmp_path: Path) -> None:
    script = _script(tmp_path, "workers.py", MATMUL + (
        "import subprocess, sys, threading\n"
        "t = threading.Thread(target=lambda: [x @ x for _ in range(20)])\n"
        "t.start(); t.join()\n"
        "subprocess.run([sys.executable, '-c', 'pass'], check=True)\n"))
    out = tmp_path / "w.json"
    result = _invoke("profile", str(script), "-o", str(out), "--device", "cpu")
    assert result.exit_code == 0, result.output
    assert "the run started 1 thread(s) and 1 child process(es) that the profiler does not follow" in result.output
    data = load_profile(out)
    assert (data.metadata["threads_started"], data.metadata["processes_started"]) == (1, 1)
    assert data.kernels.loc[data.kernels["op"] == "aten::mm", "calls"].sum() == 1  # the thread's 20 are not seen
    quiet = _invoke("profile", str(_script(tmp_path, "plain.py", MATMUL)), "-o", str(out), "--device", "cpu")
    assert "does not follow" not in quiet.output


def test_the_scripts_profiler_steps_mark_its_iterations(tmp_path: Path) -> None:
    """prof.step() under rooflinectl still opens ProfilerStep#N, so the steady state is found from it."""
    _script(tmp_path, "steps.py", "import torch\nx = torch.randn(64, 64)\n"
            "with torch.profiler.profile(schedule=torch.profiler.schedule(wait=0, warmup=1, active=5, repeat=1)) as p:\n"
            "    for _ in range(6):\n        x @ x\n        p.step()\n")
    result = _invoke("profile", str(tmp_path / "steps.py"), "-o", str(tmp_path / "s.json"), "-q", "--device", "cpu")
    assert result.exit_code == 0, result.output
    summary = load_profile(tmp_path / "s.json").summary
    assert summary["iterations_method"] == "profiler_step" and summary["iterations_found"] >= 5


# -o -: the profile owns standard output -------------------------------------------------------------

PRINTS = ("import os, subprocess, sys\n" + MATMUL +
          "print('from print')\n"
          "os.write(1, b'from fd 1\\n')\n"
          "subprocess.run([sys.executable, '-c', 'print(\"from a child\")'], check=True)\n")


@pytest.mark.slow
@pytest.mark.parametrize("ending, code", [("", 0), ("os._exit(3)\n", 3)])
def test_profile_to_stdout_sends_the_scripts_output_to_stderr(tmp_path: Path, ending: str, code: int) -> None:
    """`profile x.py -o - | jq` must read JSON only: the script's prints (Python, fd 1, a child's) go to stderr,
    also when the run ends by os._exit and the partial profile is written then."""
    _script(tmp_path, "p.py", PRINTS + ending)
    result = _subprocess("profile", "p.py", "-o", "-", "--device", "cpu", cwd=tmp_path)
    assert result.returncode == code, result.stderr
    profile = json.loads(result.stdout)  # was: "from print" first, then the JSON
    assert profile["metadata"]["completed"] is (code == 0)
    for line in ("from print", "from fd 1", "from a child"):
        assert line in result.stderr


def test_ncu_report_without_counters_is_a_usage_error(tmp_path: Path, monkeypatch) -> None:
    """--ncu-report names the report of the counters run: without --counters there is none, and
    silently writing nothing would look like a lost report."""
    monkeypatch.chdir(tmp_path)
    _script(tmp_path, "s.py", "open('ran', 'w').write('yes')\n" + MATMUL)
    result = _invoke("profile", "s.py", "-q", "--device", "cpu", "--ncu-report", "r")
    assert result.exit_code == EXIT_USAGE, result.output
    assert result.output.startswith("rooflinectl: --ncu-report keeps Nsight Compute's report")
    assert not (tmp_path / "ran").exists()
