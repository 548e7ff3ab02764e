"""Issue 36, data loss: what is not ours is never replaced, and a write that runs out of room is
one sentence (exit 6) with no temp file left. Special files are tested with a FIFO of the test's
own and full disks with fakes or `ulimit -f` in a child process: never the system's devices."""

from __future__ import annotations

import errno
import json
import os
import resource
import shutil
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

import rooflinectl
from rooflinectl import atomic
from rooflinectl.cli.main import main
from rooflinectl.errors import EXIT_USAGE

EXIT_WRITE = 6  # errors.EXIT_WRITE (spelt here so the file also runs against code without it)

GOOD = Path(__file__).parent / "data" / "h200_attention_naive.profile.json"
ROOT = Path(rooflinectl.__file__).resolve().parents[1]  # the code under test (a child process imports it too)
DATA = Path(__file__).parent / "data"


def _invoke(*args: str, cwd: Path | None = None):
    if cwd is not None:
        os.chdir(cwd)
    return CliRunner().invoke(main, list(args))


@pytest.fixture()
def profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    target = tmp_path / "p.json"
    shutil.copy(GOOD, target)
    return target


def _no_temp_left(folder: Path) -> None:
    assert not [p.name for p in folder.iterdir() if ".tmp" in p.name], list(folder.iterdir())


# a FIFO (and any special file) is written into, never renamed over ------------------------------

def _drain(fifo: Path, into: list[bytes]) -> threading.Thread:
    def read() -> None:
        with open(fifo, "rb") as handle:
            into.append(handle.read())
    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("args", [["advise", "{p}"], ["advise", "{p}", "--format", "markdown"],
                                  ["show", "{p}", "--format", "csv"], ["diff", "{p}", "{p}"]])
def test_a_fifo_output_is_written_into_not_replaced(profile: Path, tmp_path: Path, args: list[str]) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = _drain(fifo, got)
    result = _invoke(*[a.format(p=profile) for a in args], "-o", str(fifo))
    reader.join(timeout=30)
    assert result.exit_code in (0, 1), result.output
    assert stat.S_ISFIFO(os.stat(fifo).st_mode), "the FIFO was replaced by a regular file"
    assert got and got[0], "nothing reached the reader"
    _no_temp_left(tmp_path)


@pytest.mark.slow
def test_profile_output_onto_a_fifo_is_written_into(tmp_path: Path) -> None:
    """`profile s.py -o fifo` (a real run, in a child process): the FIFO stays a FIFO."""
    script = tmp_path / "s.py"
    script.write_text("import torch\nx = torch.randn(32, 32)\ny = x @ x\n")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = _drain(fifo, got)
    done = subprocess.run([sys.executable, "-m", "rooflinectl", "profile", str(script), "-o", str(fifo), "-q",
                           "--device", "cpu"], cwd=tmp_path, capture_output=True, text=True, timeout=240,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    reader.join(timeout=30)
    assert done.returncode == 0, done.stderr
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert json.loads(got[0])["format"] == "rooflinectl-profile"


def test_atomic_file_writes_into_a_special_file_and_renames_nothing(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The mechanism: a non-regular target is opened and written, os.replace is never called."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = _drain(fifo, got)

    def no_replace(*_: object) -> None:
        raise AssertionError("a special file was renamed over")

    monkeypatch.setattr(atomic.os, "replace", no_replace)
    atomic.write_atomic(fifo, "hello")
    reader.join(timeout=10)
    assert got == [b"hello"]


# outputs that are inputs, profiles or files of the user's -----------------------------------------

@pytest.mark.parametrize("args,target", [
    (["advise", "p.json", "-o", "p.json"], "p.json"),  # its own input
    (["diff", "base.json", "p.json", "-o", "base.json"], "base.json"),  # the CI baseline
    (["advise", "p.json", "--format", "markdown", "-o", "README.md"], "README.md"),  # the user's README
    (["show", "p.json", "--format", "csv", "-o", "data.csv"], "data.csv"),  # the user's data
    (["show", "p.json", "--format", "json", "-o", "other.json"], "other.json"),  # another profile
])
def test_a_report_does_not_replace_what_is_not_ours(profile: Path, tmp_path: Path, args: list[str],
                                                    target: str) -> None:
    shutil.copy(GOOD, tmp_path / "base.json")
    shutil.copy(GOOD, tmp_path / "other.json")
    (tmp_path / "README.md").write_text("# my project\n")
    (tmp_path / "data.csv").write_text("a,b\n1,2\n")
    before = (tmp_path / target).read_bytes()
    result = _invoke(*args)
    assert result.exit_code == EXIT_USAGE, result.output
    assert "--force" in result.output and result.output[-1] == "\n" and result.output.count("\n") == 1
    assert (tmp_path / target).read_bytes() == before
    forced = _invoke(*args, "--force")
    assert forced.exit_code in (0, 1), forced.output
    assert (tmp_path / target).read_bytes() != before


def test_a_report_replaces_its_own_earlier_report(profile: Path, tmp_path: Path) -> None:
    for fmt, name in (("markdown", "a.md"), ("junit", "a.xml"), ("json", "a.json"), ("github", "a.txt")):
        assert _invoke("advise", "p.json", "--format", fmt, "-o", name).exit_code == 0
        again = _invoke("advise", "p.json", "--format", fmt, "-o", name)
        assert again.exit_code == 0, (fmt, again.output)
    assert _invoke("show", "p.json", "--format", "csv", "-o", "t.csv").exit_code == 0
    assert _invoke("show", "p.json", "--format", "csv", "-o", "t.csv").exit_code == 0


def test_empty_output_name_says_it_is_empty(profile: Path) -> None:
    for args in (["advise", "p.json", "-o", ""], ["show", "p.json", "-o", ""], ["analyse", "p.json", "-o", ""]):
        result = _invoke(*args)
        assert result.exit_code == EXIT_USAGE
        assert "empty" in result.output and "folder" not in result.output, result.output


@pytest.mark.parametrize("flags", [["-o", "X.json", "--save-trace", "X.json"],
                                   ["--save-trace", "T.json", "--save-capture", "T.json"],
                                   ["-o", "X.json", "--save-capture", "X.json"]])
def test_two_outputs_of_one_profile_run_on_one_path_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                flags: list[str]) -> None:
    monkeypatch.chdir(tmp_path)
    script = tmp_path / "s.py"
    script.write_text("raise SystemExit('the script must not run')\n")
    result = _invoke("profile", str(script), *flags, "--device", "cpu")
    assert result.exit_code == EXIT_USAGE, result.output
    assert "another output of this command" in result.output
    assert "must not run" not in result.output


@pytest.mark.slow
def test_a_script_that_exits_before_any_op_keeps_the_previous_profile(tmp_path: Path) -> None:
    shutil.copy(GOOD, tmp_path / "rooflinectl.profile.json")
    before = (tmp_path / "rooflinectl.profile.json").read_bytes()
    script = tmp_path / "s.py"
    script.write_text("import sys\nimport torch\nsys.exit(0)\n")
    done = subprocess.run([sys.executable, "-m", "rooflinectl", "profile", str(script), "--device", "cpu", "-q"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=240,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "rooflinectl.profile.json").read_bytes() == before
    assert "no profile written" in done.stderr


# no room: a full disk (fake) and a file size limit (real, in a child) -------------------------------

class _FullDisk:
    """A handle whose writes fail as on a full disk (ENOSPC) once `room` bytes are written."""

    def __init__(self, handle, room: int = 10) -> None:
        self.handle, self.room = handle, room

    def write(self, data):
        if len(data) > self.room:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.room -= len(data)
        return self.handle.write(data)

    def __getattr__(self, name: str):
        return getattr(self.handle, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.handle.close()


@pytest.fixture()
def full_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    real_fdopen = os.fdopen
    monkeypatch.setattr(atomic.os, "fdopen", lambda *a, **k: _FullDisk(real_fdopen(*a, **k)))


@pytest.mark.parametrize("args", [["advise", "p.json", "-o", "out.txt"], ["show", "p.json", "-o", "out.txt"],
                                  ["diff", "p.json", "p.json", "-o", "out.txt"],
                                  ["advise", "p.json", "--format", "json", "-o", "out.txt"],
                                  ["plot", "p.json", "-o", "out.png"],
                                  ["analyse", str(DATA / "h200_mlp_bf16.capture.json.gz"), "-o", "q.json",
                                   "-q"]])
def test_a_full_disk_is_one_sentence_exit_6_and_no_temp_file(profile: Path, tmp_path: Path, full_disk: None,
                                                              args: list[str]) -> None:
    result = _invoke(*args)
    assert result.exit_code == EXIT_WRITE, result.output
    assert "disk is full" in result.output and "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    _no_temp_left(tmp_path)


def test_no_room_is_an_oserror_too() -> None:
    """ProfileWriter falls back on another path for any OSError: a full disk still does."""
    from rooflinectl.errors import OutputWriteError

    assert issubclass(OutputWriteError, OSError)


def _limit_file_size() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (2000, 2000))


def test_ulimit_f_is_one_sentence_and_no_temp_file(profile: Path, tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "rooflinectl", "advise", "p.json", "--format", "json", "-o",
                           "big.json"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          preexec_fn=_limit_file_size, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == EXIT_WRITE, done.stderr
    assert "file size limit" in done.stderr and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1
    _no_temp_left(tmp_path)
    assert not (tmp_path / "big.json").exists()


def test_a_full_disk_on_the_trace_still_says_where_the_profile_is(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from rooflinectl.errors import no_room_error
    from rooflinectl.profiling import ProfilePipeline

    def full(*_: object) -> None:
        raise no_room_error(OSError(errno.ENOSPC, "No space left on device"), tmp_path / "t.json")

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(ProfilePipeline, "save_trace", full)
    script = tmp_path / "s.py"
    script.write_text("import torch\nx = torch.randn(32, 32)\ny = x @ x\n")
    result = _invoke("profile", str(script), "--save-trace", "t.json", "-q", "--device", "cpu")
    assert result.exit_code == EXIT_WRITE, result.output
    assert "disk is full" in result.output and "profile written to rooflinectl.profile.json" in result.output
    assert (tmp_path / "rooflinectl.profile.json").exists()
