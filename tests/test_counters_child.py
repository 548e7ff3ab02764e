"""The program run under ncu (capture/ncu/child.py): the user's script or function as `rooflinectl
profile` runs it, its exit code kept, a status file saying how it ended."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def child(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, dict]:
    status = tmp_path / "status.json"
    done = subprocess.run([sys.executable, "-m", "rooflinectl.capture.ncu.child", "--status", str(status), *args],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)
    return done, json.loads(status.read_text())


def test_script_runs_as_main_with_its_arguments_and_exit_code(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text("import sys\nimport rooflinectl\n"
                      "if __name__ == '__main__':\n"
                      "    with rooflinectl.region('r'):\n"
                      f"        print('args', sys.argv[1:], sys.path[0] == {str(tmp_path)!r})\n"
                      "    sys.exit(int(sys.argv[-1]))\n")
    done, status = child(tmp_path, "--regions", "script", str(script), "--", "--flag", "7")
    assert "args ['--flag', '7'] True" in done.stdout
    assert done.returncode == 7 and status == {"exit_code": 7, "completed": False}


def test_function_mode_calls_warmup_then_iterations(tmp_path):
    target = tmp_path / "fn.py"
    target.write_text("calls = []\n"
                      "def make_inputs():\n    return (2,)\n"
                      "def step(x):\n    calls.append(x)\n    print('call', len(calls), x)\n")
    done, status = child(tmp_path, "function", str(target), "step", "--warmup", "2", "--iters", "3")
    assert done.stdout.splitlines() == [f"call {i} 2" for i in range(1, 6)]
    assert status == {"exit_code": 0, "completed": True}
    done, status = child(tmp_path, "function", str(target), "nope", "--warmup", "0", "--iters", "1")
    assert "has no function named 'nope'" in done.stderr and status["exit_code"] == 2
