"""Run a user's script (as `python script.py args` would) or one of its functions, profiled.

Script mode: its own `__main__`, sys.argv and sys.path[0]; its exit code and traceback are its
own. Function mode (`file.py:function`): the file is imported (its `__main__` block does not
run); the function is called with no arguments, or with what the file's `make_inputs()` returns
(a tuple: positional args, a dict: keyword args, anything else: one argument), `warmup` times
unprofiled, then `iters` times under the profiler.
"""

from __future__ import annotations

import importlib.util
import inspect
import runpy
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from rooflinectl.capture.run.hard_exit import saving_on_hard_exit
from rooflinectl.capture.run.process import THIS_PROCESS
from rooflinectl.capture.run.region import WARMUP_NAME
from rooflinectl.capture.run.session import Capture, ProfilingSession
from rooflinectl.capture.run.user_profiler import stand_ins_installed
from rooflinectl.capture.run.workers import PACKAGE_FOLDER
from rooflinectl.errors import RooflineError, UsageError


@dataclass
class RunOutcome:
    capture: Capture
    exit_code: int  # the script's own: 0, its sys.exit code, or 1 for an uncaught exception
    completed: bool


def split_target(target: str) -> tuple[Path, str | None]:
    """'path/to/file.py:function' -> (path, 'function'); 'script.py' -> (path, None)."""
    path_text, func, function_target = target, "", False
    if not Path(target).is_file() and ":" in target:
        path_text, func = target.rsplit(":", 1)
        function_target = True
    path = Path(path_text)
    if not path.is_file():
        raise UsageError(f"No such script: {path_text}")
    if function_target and not func:
        raise UsageError(f"'{target}' names no function after ':': give FILE.py:FUNCTION, or FILE.py to run the script.")
    if func and not func.isidentifier():
        raise UsageError(f"'{func}' is not a Python function name (expected FILE.py:FUNCTION).")
    return path, func or None


def _compiles(path: Path) -> bool:
    """Compile the script first, so a file that is not Python never starts a profiling run.

    A .py file with a syntax error gets Python's own message (and exit code 1, as `python` gives);
    any other file that does not compile is one sentence: it is not a Python script.
    """
    try:
        compile(path.read_bytes(), str(path), "exec")
    except SyntaxError as exc:
        if path.suffix not in (".py", ".pyw"):
            where = f" (line {exc.lineno}: {exc.msg})" if exc.lineno else ""
            raise UsageError(f"{path} is not a Python script{where}.") from None
        traceback.print_exception(type(exc), exc, None, file=sys.stderr)
        return False
    except ValueError as exc:  # null bytes
        raise UsageError(f"{path} is not a Python script ({exc}).") from None
    return True


@contextmanager
def _as_main_script(path: Path, argv: list[str]) -> Iterator[None]:
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [str(path), *argv]
    sys.path.insert(0, str(path.resolve().parent))
    try:
        yield
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path


def _is_ours(filename: str) -> bool:
    """A frame of rooflinectl, runpy or the import machinery: not the user's."""
    return (filename.startswith(("<frozen runpy", "<frozen importlib")) or filename == runpy.__file__
            or str(Path(filename).resolve()).startswith(PACKAGE_FOLDER))


def _print_user_traceback(exc: BaseException) -> None:
    """Print the traceback as Python would, from the first of the user's frames (rooflinectl's,
    runpy's and importlib's leading frames dropped; none left: the exception alone, as Python
    prints a syntax error)."""
    tb = exc.__traceback__
    while tb is not None and _is_ours(tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next
    traceback.print_exception(type(exc), exc, tb, file=sys.stderr)


def _exit_code(exc: SystemExit) -> int:
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _guarded(run: Callable[[], object]) -> tuple[int, bool]:
    """Run the user's code; (exit code, completed) as `python` would give them. What it returns
    (a script's globals) or raises is kept until the interpreter exits (capture/run/process.py:
    freed earlier, a DDP job could deadlock)."""
    try:
        THIS_PROCESS.keep_until_exit(run())
    except RooflineError:
        raise
    except SystemExit as exc:
        THIS_PROCESS.keep_until_exit(exc)
        code = _exit_code(exc)
        return code, code == 0
    except KeyboardInterrupt as exc:
        THIS_PROCESS.keep_until_exit(exc)
        _print_user_traceback(exc)
        return 130, False
    except Exception as exc:  # noqa: BLE001 - the user's error, shown as Python shows it
        THIS_PROCESS.keep_until_exit(exc)
        _print_user_traceback(exc)
        return 1, False
    return 0, True


# What a hard exit saves: given the capture of the session that was recording (finished first,
# so it holds what ran), or None when none was (it ended before profiling began), the exit code
# and what ended it ("os._exit(3)", "SIGTERM").
SaveCapture = Callable[[Capture | None, int, str], None]


class HardExitWatch:
    """The session of one run that a hard exit (capture/run/hard_exit.py) must save: the run
    names it when it starts; at os._exit or SIGTERM the session still recording is finished
    and its capture handed to `save`."""

    def __init__(self, save: SaveCapture) -> None:
        self.save = save
        self.session: ProfilingSession | None = None

    def __call__(self, exit_code: int, what: str) -> None:
        session = self.session
        if session is None or not session.running:
            self.save(None, exit_code, what)
            return
        session.finish()
        self.save(session.capture, exit_code, what)


def _watch(save: SaveCapture | None) -> HardExitWatch | None:
    return HardExitWatch(save) if save is not None else None


def run_script(path: Path, argv: list[str], device_kind: str, on_hard_exit: SaveCapture | None = None,
               profile_steps: int | str | None = None, keep_trace_file: bool = False) -> RunOutcome:
    """Run the script profiled; a script that does not compile runs nothing (trace None, exit 1).
    profile_steps: profile that many iterations ("auto", N; None or "all": the whole run), then
    run on unprofiled (capture/run/step_limit.py). keep_trace_file: see ProfilingSession."""
    if not _compiles(path):
        return RunOutcome(Capture(device_kind=device_kind), 1, False)
    watch = _watch(on_hard_exit)
    with (_as_main_script(path, argv), saving_on_hard_exit(watch),
          ProfilingSession(device_kind, profile_steps, keep_trace_file=keep_trace_file) as session):
        if watch is not None:
            watch.session = session
        code, completed = _guarded(lambda: runpy.run_path(str(path), run_name="__main__"))
    return RunOutcome(session.capture, code, completed)


def _check_inputs_fit(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], path: Path,
                      name: str, has_make_inputs: bool) -> None:
    """Say what to add when the function cannot be called with the inputs we have."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin or C function: no signature to check
        return
    try:
        signature.bind(*args, **kwargs)
    except TypeError as exc:
        if has_make_inputs:
            raise UsageError(f"make_inputs() in {path} returned inputs that do not fit {name}{signature}: {exc}.") from None
        needed = [p.name for p in signature.parameters.values()
                  if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        raise UsageError(f"{name}() in {path} needs arguments ({', '.join(needed)}): add a make_inputs() to {path} "
                         "that returns them (a tuple: positional, a dict: keyword, anything else: one argument).") from None


def _no_such_function(path: Path, name: str, module: Any) -> str:
    """The sentence for FILE.py:NAME when NAME is missing: the functions the file itself defines
    (not those it imports), so the user picks one instead of opening the file."""
    defined = [n for n, v in vars(module).items() if inspect.isfunction(v) and v.__module__ == module.__name__
               and n != "make_inputs"]
    if not defined:
        return f"{path} has no function named '{name}', and defines none to profile."
    return f"{path} has no function named '{name}'; it defines: {', '.join(defined)}."


def load_function(path: Path, name: str) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
    """Import the file (not as __main__) and return the function and its inputs."""
    spec = importlib.util.spec_from_file_location(f"rooflinectl_target_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise UsageError(f"Cannot import {path} as a Python file.")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.resolve().parent))
    # Registered before it runs, as `import` does: @dataclass, pickle and typing look the module
    # up in sys.modules by name while its body executes.
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(spec.name, None)
        raise
    fn = getattr(module, name, None)
    if not callable(fn):
        raise UsageError(_no_such_function(path, name, module))
    make_inputs = getattr(module, "make_inputs", None)
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = {}
    if callable(make_inputs):
        inputs = make_inputs()
        if isinstance(inputs, tuple):
            args = inputs
        elif isinstance(inputs, dict):
            kwargs = inputs
        else:
            args = (inputs,)
    _check_inputs_fit(fn, args, kwargs, path, name, callable(make_inputs))
    return fn, args, kwargs


def time_calls(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], *, warmup: int,
                iters: int, device_kind: str) -> dict[str, Any]:
    """The function as it runs without the profiler: `warmup` calls, then `iters` calls each
    timed (CUDA events recorded on the current stream around the call, read after one sync at
    the end; the host clock on CPU). Run after the session (its hooks removed): a function that
    torch.compile compiles must compile under the session (Inductor's annotations, a CUDA graph
    captured in the trace); the session detaches CUPTI at its stop when it is the process's
    first (capture/run/session.py), else a later session's plain calls may pay for CUPTI left
    attached. What idle and launch advice compare the profiled calls with."""
    for _ in range(max(warmup, 0)):
        fn(*args, **kwargs)
    times_s: list[float] = []
    if device_kind == "cuda":
        torch.cuda.synchronize()
        pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(iters)]
        for start, end in pairs:
            start.record()
            fn(*args, **kwargs)
            end.record()
        torch.cuda.synchronize()
        times_s = [start.elapsed_time(end) / 1e3 for start, end in pairs]
    else:
        for _ in range(iters):
            began = time.perf_counter()
            fn(*args, **kwargs)
            times_s.append(time.perf_counter() - began)
    return {"warmup": max(warmup, 0), "timed_by": "cuda_events" if device_kind == "cuda" else "wall_clock",
            "call_times_s": times_s}


def profile_calls(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], *, warmup: int,
                  iters: int, device_kind: str, plain_timing: bool = True, own_process: bool = False,
                  keep_trace_file: bool = False, watch: HardExitWatch | None = None) -> Capture:
    """Call fn `warmup` times, then `iters` times under the profiler (exceptions propagate);
    then, with plain_timing, once more and `iters` times without it (time_calls: metadata
    "unprofiled_calls"). own_process: the CLI's run, where this is the process's one session: it
    then detaches CUPTI at its stop for the plain calls (not in a notebook or a test process,
    where later sessions follow: capture/run/session._cupti_torn_down_after_stop).
    keep_trace_file: see ProfilingSession; watch: told the session, for a hard exit.

    The warm-up runs profiled too, inside an annotation that is never counted: a function that
    torch.compile compiles there is compiled as it will run (module scopes and Inductor's
    annotations on, not once more), and a CUDA graph captured there (mode="reduce-overhead")
    is in the trace, so its replays get the ops of its capture."""
    if iters < 1:
        raise UsageError("--iters must be at least 1.")
    with ProfilingSession(device_kind, runs_on=plain_timing and own_process,
                          keep_trace_file=keep_trace_file) as session:
        if watch is not None:
            watch.session = session
        with torch.profiler.record_function(WARMUP_NAME):
            for _ in range(max(warmup, 0)):
                fn(*args, **kwargs)
            if device_kind == "cuda":
                torch.cuda.synchronize()
        for _ in range(iters):
            fn(*args, **kwargs)
    capture = session.capture
    capture.metadata["iterations"] = iters  # known: no iteration search
    if plain_timing:
        try:
            capture.metadata["unprofiled_calls"] = time_calls(fn, args, kwargs, warmup=1, iters=iters,
                                                              device_kind=device_kind)
        except Exception as exc:  # noqa: BLE001 - the profile of the calls that ran is kept
            capture.metadata["unprofiled_calls"] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
    return capture


def run_function(path: Path, name: str, *, warmup: int, iters: int, device_kind: str,
                 on_hard_exit: SaveCapture | None = None, keep_trace_file: bool = False) -> RunOutcome:
    """Import the file, call its function profiled (profile_calls), as the CLI's own process does."""
    holder: dict[str, Capture] = {}
    watch = _watch(on_hard_exit)

    def run() -> None:
        fn, args, kwargs = load_function(path, name)
        holder["capture"] = profile_calls(fn, args, kwargs, warmup=warmup, iters=iters, device_kind=device_kind,
                                          own_process=True, keep_trace_file=keep_trace_file, watch=watch)

    # the stand-in for the file's own profiler is in place before it is imported (see user_profiler)
    with _as_main_script(path, []), stand_ins_installed(), saving_on_hard_exit(watch):
        code, completed = _guarded(run)
    capture = holder.get("capture")
    if capture is None:
        capture = Capture(device_kind=device_kind)
    return RunOutcome(capture, code, completed)
