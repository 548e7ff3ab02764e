"""Run a user's script (as `python script.py args` would) or one of its functions, profiled.

Script mode: its own `__main__`, sys.argv and sys.path[0]; its exit code and traceback are its
own. Function mode (`file.py:function`): the file is imported (its `__main__` block does not
run); the function is called with no arguments, or with what the file's `make_inputs()` returns
(a tuple: positional args, a dict: keyword args, anything else: one argument), `warmup` times
unprofiled, then `iters` times under the profiler.
"""

from __future__ import annotations

import importlib.util
import runpy
import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from rooflinectl.capture.region import WARMUP_NAME
from rooflinectl.capture.session import Capture, profiling
from rooflinectl.errors import RooflineError, UsageError


@dataclass
class RunOutcome:
    capture: Capture
    exit_code: int  # the script's own: 0, its sys.exit code, or 1 for an uncaught exception
    completed: bool


def split_target(target: str) -> tuple[Path, str | None]:
    """'path/to/file.py:function' -> (path, 'function'); 'script.py' -> (path, None)."""
    path_text, func = target, ""
    if not Path(target).is_file() and ":" in target:
        path_text, func = target.rsplit(":", 1)
    path = Path(path_text)
    if not path.is_file():
        raise UsageError(f"No such script: {path_text}")
    if func and not func.isidentifier():
        raise UsageError(f"'{func}' is not a Python function name (expected FILE.py:FUNCTION).")
    return path, func or None


@contextmanager
def _as_main_script(path: Path, argv: list[str]) -> Iterator[None]:
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [str(path), *argv]
    sys.path.insert(0, str(path.resolve().parent))
    try:
        yield
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path


def _print_user_traceback(exc: BaseException, script: Path) -> None:
    """Print the traceback as Python would, starting at the user's frames (not ours or runpy's)."""
    tb = exc.__traceback__
    resolved = str(script.resolve())
    while tb is not None and tb.tb_frame.f_code.co_filename != resolved:
        tb = tb.tb_next
    traceback.print_exception(type(exc), exc, tb if tb is not None else exc.__traceback__, file=sys.stderr)


def _exit_code(exc: SystemExit) -> int:
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _guarded(run: Callable[[], None], script: Path) -> tuple[int, bool]:
    try:
        run()
    except RooflineError:
        raise
    except SystemExit as exc:
        code = _exit_code(exc)
        return code, code == 0
    except KeyboardInterrupt as exc:
        _print_user_traceback(exc, script)
        return 130, False
    except Exception as exc:  # noqa: BLE001 - the user's error, shown as Python shows it
        _print_user_traceback(exc, script)
        return 1, False
    return 0, True


def run_script(path: Path, argv: list[str], device_kind: str) -> RunOutcome:
    with _as_main_script(path, argv), profiling(device_kind) as capture:
        code, completed = _guarded(lambda: runpy.run_path(str(path), run_name="__main__"), path)
    return RunOutcome(capture, code, completed)


def load_function(path: Path, name: str) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
    """Import the file (not as __main__) and return the function and its inputs."""
    spec = importlib.util.spec_from_file_location(f"rooflinectl_target_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise UsageError(f"Cannot import {path} as a Python file.")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.resolve().parent))
    spec.loader.exec_module(module)
    fn = getattr(module, name, None)
    if not callable(fn):
        raise UsageError(f"{path} has no function named '{name}'.")
    make_inputs = getattr(module, "make_inputs", None)
    if not callable(make_inputs):
        return fn, (), {}
    inputs = make_inputs()
    if isinstance(inputs, tuple):
        return fn, inputs, {}
    if isinstance(inputs, dict):
        return fn, (), inputs
    return fn, (inputs,), {}


def profile_calls(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], *, warmup: int,
                  iters: int, device_kind: str) -> Capture:
    """Call fn `warmup` times, then `iters` times under the profiler (exceptions propagate).

    The warm-up runs profiled too, inside an annotation that is never counted: a function that
    torch.compile compiles there is compiled as it will run (module scopes and Inductor's
    annotations on, not once more), and a CUDA graph captured there (mode="reduce-overhead")
    is in the trace, so its replays get the ops of its capture."""
    if iters < 1:
        raise UsageError("--iters must be at least 1.")
    with profiling(device_kind) as capture:
        with torch.profiler.record_function(WARMUP_NAME):
            for _ in range(max(warmup, 0)):
                fn(*args, **kwargs)
            if device_kind == "cuda":
                torch.cuda.synchronize()
        for _ in range(iters):
            fn(*args, **kwargs)
    capture.metadata["iterations"] = iters  # known: no iteration search
    return capture


def run_function(path: Path, name: str, *, warmup: int, iters: int, device_kind: str) -> RunOutcome:
    holder: dict[str, Capture] = {}

    def run() -> None:
        fn, args, kwargs = load_function(path, name)
        holder["capture"] = profile_calls(fn, args, kwargs, warmup=warmup, iters=iters, device_kind=device_kind)

    with _as_main_script(path, []):
        code, completed = _guarded(run, path)
    capture = holder.get("capture")
    if capture is None:
        capture = Capture(device_kind=device_kind)
    return RunOutcome(capture, code, completed)
