"""The program run under ncu (capture/ncu/child.py): the user's script or function as `rooflinectl
profile` runs it, its exit code kept, a status file saying how it ended. Run in-process here (no
CUDA: the profiler range calls are skipped); under ncu the same code runs as `python -m`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from rooflinectl.capture.ncu.child import run


def child(tmp_path: Path, *args: str) -> tuple[int, dict]:
    status = tmp_path / "status.json"
    code = run(["--status", str(status), *args])
    return code, json.loads(status.read_text())


def test_script_runs_as_main_with_its_arguments_and_exit_code(tmp_path, capsys):
    script = tmp_path / "prog.py"
    script.write_text("import sys\nimport rooflinectl\n"
                      "if __name__ == '__main__':\n"
                      "    with rooflinectl.region('r'):\n"
                      f"        print('args', sys.argv[1:], sys.path[0] == {str(tmp_path)!r})\n"
                      "    sys.exit(int(sys.argv[-1]))\n")
    argv_before = list(sys.argv)
    code, status = child(tmp_path, "--regions", "script", str(script), "--", "--flag", "7")
    assert "args ['--flag', '7'] True" in capsys.readouterr().out
    assert code == 7 and status == {"exit_code": 7, "completed": False}
    assert sys.argv == argv_before  # the program's argv does not leak


def test_function_mode_calls_warmup_then_iterations(tmp_path, capsys):
    target = tmp_path / "fn.py"
    target.write_text("calls = []\n"
                      "def make_inputs():\n    return (2,)\n"
                      "def step(x):\n    calls.append(x)\n    print('call', len(calls), x)\n")
    code, status = child(tmp_path, "function", str(target), "step", "--warmup", "2", "--iters", "3")
    assert capsys.readouterr().out.splitlines() == [f"call {i} 2" for i in range(1, 6)]
    assert code == 0 and status == {"exit_code": 0, "completed": True}
    code, status = child(tmp_path, "function", str(target), "nope", "--warmup", "0", "--iters", "1")
    assert "has no function named 'nope'" in capsys.readouterr().err and code == status["exit_code"] == 2
