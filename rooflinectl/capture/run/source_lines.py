"""The user's source line of each torch call, as a profiler annotation around the call.

torch.profiler's own Python stacks (`with_stack=True`) name a function's first line, not the
line that called the op, and miss `x @ w` altogether; they also cost far more. Instead, while
the profiler records, a `TorchFunctionMode` sees every torch call made from Python. Its handler
walks up the caller's frames to the first frame of the user's own files (the script's directory
and the working directory, less site-packages, the standard library and rooflinectl itself),
interns (file, line, function, library call) as a small integer and runs the call inside a
`_RecordFunctionFast` scope named SOURCE_PREFIX + that integer (capture/modules.py explains why
that record function). The ops, and through them the kernels, nested in the scope get the
location at attribution (attribution/sources.py); the table of locations goes into the run's
metadata (`source_lines`). Torch calls made inside the handler are not intercepted again
(torch takes the mode off its stack while the handler runs), so one scope opens per user call.

Where torch.compile is in use the mode stays out: Dynamo guards on the mode stack, so a graph
compiled while the mode is there would compile again in the un-profiled steps without it. The
mode is not installed when Dynamo has compiled before the session starts (function mode's
warm-up), and it takes itself off the stack from Dynamo's compile-start callback, before Dynamo
reads that stack, when a compile starts during the session. At the step limit's stop the mode
goes; nothing of ours stays in the un-profiled steps.
"""

from __future__ import annotations

import os
import site
import sys
import sysconfig
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from types import CodeType, ModuleType
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from rooflinectl.capture.read.spec import SOURCE_PREFIX
from rooflinectl.capture.run.compiled_calls import _PatchOnImport

_RecordFunctionFast = getattr(torch._C._profiler, "_RecordFunctionFast", None)
METADATA_KEY = "source_lines"
_LIBRARY, _USER, _PLUMBING = 0, 1, 2  # what a code object's file is
_ENABLED = [True]  # profile --no-source turns it off for the sessions in its block
# torch functions' modules as the user writes them
_MODULE_NAMES = {"torch._C._nn": "torch.nn.functional", "torch._C._VariableFunctions": "torch",
                 "torch.functional": "torch", "torch._C._linalg": "torch.linalg", "torch._C._fft": "torch.fft",
                 "torch._C._special": "torch.special", "torch._tensor": "", None: ""}
# torch's own dispatch frames between a library function and the handler: never named as the call
_GENERATED = ("torchinductor_", ".triton")  # folders of generated code (Inductor's cache, Triton's)
_PLUMBING_FILES = ("overrides.py", "_tensor.py", "_jit_internal.py", "_device.py", "_contextlib.py")


@contextmanager
def source_lines_enabled(enabled: bool) -> Iterator[None]:
    """Sessions in the block capture source lines or not (`profile --source/--no-source`)."""
    saved = _ENABLED[0]
    _ENABLED[0] = enabled
    try:
        yield
    finally:
        _ENABLED[0] = saved


def call_name(func: Any) -> str:
    """A torch function as the user writes it: torch.matmul, Tensor.add_, torch.nn.functional.linear."""
    qual = str(getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or type(func).__name__)
    if qual.startswith("TensorBase."):
        qual = "Tensor." + qual[len("TensorBase."):]
    qual = qual.removeprefix("_VariableFunctionsClass.")
    module = getattr(func, "__module__", None)
    if qual.startswith("Tensor."):
        return qual
    prefix = _MODULE_NAMES.get(module, module)
    return f"{prefix}.{qual}" if prefix else qual


def _library_roots() -> tuple[str, ...]:
    """Directories whose files are never the user's: the interpreter's, the installed packages',
    torch's and rooflinectl's own (both may be installed in place, outside site-packages)."""
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, site.getusersitepackages()}
    roots.update(site.getsitepackages() if hasattr(site, "getsitepackages") else [])
    roots.update(p for key in ("stdlib", "platstdlib", "purelib", "platlib") if (p := sysconfig.get_path(key)))
    roots.update(str(Path(m.__file__).resolve().parent) for m in (torch, sys.modules["rooflinectl"]))
    return tuple(sorted(os.path.join(os.path.realpath(r), "") for r in roots if r))


class _Files:
    """Which code objects are the user's (decided once per code object): a real file under a user
    root (the working directory, the script's directory) and under no library root."""

    def __init__(self, user_roots: list[str]) -> None:
        self.user_roots = tuple(os.path.join(os.path.realpath(r), "") for r in user_roots)
        self.library_roots = _library_roots()
        # id(code) -> (code, kind): keyed by id, not the code object, whose hash CPython computes
        # again at every call over its constants and names (0.5-0.8 us a frame on the CPU machine,
        # for each frame of each walk); the value holds the code, so its id is never reused
        self.kinds: dict[int, tuple[CodeType, int]] = {}
        self.paths: dict[str, str] = {}

    def kind(self, code: CodeType) -> int:
        known = self.kinds.get(id(code))
        if known is None:
            known = self.kinds[id(code)] = (code, self._classify(code.co_filename))
        return known[1]

    def _classify(self, filename: str) -> int:
        if filename.startswith("<"):
            return _LIBRARY
        path = os.path.realpath(filename)
        parts = Path(path).parts
        if any(p.startswith(_GENERATED) for p in parts):  # torch.compile's and Triton's generated code
            return _LIBRARY
        if "site-packages" in parts or "dist-packages" in parts or path.startswith(self.library_roots):
            if os.path.basename(path) in _PLUMBING_FILES and f"{os.sep}torch{os.sep}" in path:
                return _PLUMBING
            return _LIBRARY
        return _USER if path.startswith(self.user_roots) else _LIBRARY

    def display(self, filename: str) -> str:
        """The file as shown: relative to the working directory when inside it, else absolute."""
        shown = self.paths.get(filename)
        if shown is None:
            path = os.path.realpath(filename)
            cwd = os.path.join(os.path.realpath(os.getcwd()), "")
            shown = self.paths[filename] = path[len(cwd):] if path.startswith(cwd) else path
        return shown


def _package(filename: str) -> str:
    """The top-level package of a library file (the folder after site-packages), '' if none."""
    parts = Path(filename).parts
    for marker in ("site-packages", "dist-packages"):
        if marker in parts and parts.index(marker) + 1 < len(parts):
            return parts[parts.index(marker) + 1].removesuffix(".py")
    return "torch" if f"{os.sep}torch{os.sep}" in filename else ""


class SourceTable:
    """Interned locations: scope number -> [file, line, function, call]; what the profile keeps."""

    def __init__(self, files: _Files) -> None:
        self.files = files
        self.locations: list[list[Any]] = []
        self.numbers: dict[tuple[Any, ...], int] = {}
        self.names: list[str] = []  # the scope name of each number
        self.lock = threading.Lock()

    def number(self, user: CodeType, line: int, library: CodeType | None, call: str) -> int:
        """The location's number (interned: one entry per distinct user line, library frame and call;
        the code objects by id: _Files.kinds holds them, so their ids stay theirs)."""
        key = (id(user), line, id(library), call)
        number = self.numbers.get(key)
        if number is None:
            with self.lock:
                number = self.numbers.get(key)
                if number is None:
                    via = ""
                    if library is not None and library.co_name != call.rsplit(".", 1)[-1]:
                        via = f"{_package(library.co_filename)} {library.co_qualname}".strip()
                    self.locations.append([self.files.display(user.co_filename), line, user.co_qualname,
                                           f"{via} / {call}" if via else call])
                    number = self.numbers[key] = len(self.locations) - 1
                    self.names.append(f"{SOURCE_PREFIX}{number}")
        return number

    def caller(self, frame: Any, call: str) -> int | None:
        """The number of the first user frame at or above `frame`, with the innermost library
        frame below it; None when no frame is the user's (torch calling itself, a library thread)."""
        kind, library = self.files.kind, None
        while frame is not None:
            code = frame.f_code
            found = kind(code)
            if found == _USER:
                return self.number(code, frame.f_lineno, library, call)
            if library is None and found == _LIBRARY:
                library = code
            frame = frame.f_back
        return None


_CURRENT: list[SourceTable] = []  # the table of the session recording now (for the Triton launch hook)


def launch_location(call: str) -> int | None:
    """The user's line launching a Triton kernel now (capture/run/triton_hook.py calls it at each
    launch while the source-line mode is on): its location number, None when off or not found."""
    if not _CURRENT:
        return None
    try:
        return _CURRENT[-1].caller(sys._getframe(1), call)
    except Exception:  # noqa: BLE001 - runs in Triton's launch: never fail the user's launch
        return None


class SourceMode(TorchFunctionMode):
    """Runs every torch call inside a scope naming the user's line that made it."""

    def __init__(self, table: SourceTable) -> None:
        super().__init__()
        self.table = table
        self.calls: dict[Any, str | None] = {}  # func -> its call name, None: not annotated (getters)
        self.active = True  # False once taken off: a call already inside the handler passes through

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        # Dynamo tracing through the mode (its compile-start callback came too late to take it off)
        # sees only the call: sys._getframe would be a graph break, a change to the user's program
        if not self.active or torch.compiler.is_compiling():
            return func(*args, **kwargs)
        call = self.calls.get(func, "")
        if call == "":
            name = call_name(func)
            call = self.calls[func] = None if name.endswith(("__get__", "__set__")) else name
        if call is None:
            return func(*args, **kwargs)
        try:
            number = self.table.caller(sys._getframe(1), call)
        except Exception:  # noqa: BLE001 - a location of ours must never fail the user's call
            number = None
        if number is None:  # no user frame (torch calling itself, a library's thread)
            return func(*args, **kwargs)
        with _RecordFunctionFast(self.table.names[number]):  # type: ignore[misc]
            return func(*args, **kwargs)


CALLBACK_MODULE = "torch._dynamo.callback"  # where Dynamo keeps its compile callbacks


def _when_imported(name: str, then: Callable[[ModuleType], None]) -> Callable[[], None]:
    """then(module) now if the module is imported, else when the program first imports it (a
    meta path finder: importing Dynamo ourselves costs seconds); returns what removes the finder.
    In practice torch.profiler's start (torch 2.13) has imported Dynamo's callback module already."""
    module = sys.modules.get(name)
    if module is not None:
        then(module)
        return lambda: None
    finder = _PatchOnImport(name, then)
    sys.meta_path.insert(0, finder)

    def unwatch() -> None:
        if finder in sys.meta_path:
            sys.meta_path.remove(finder)

    return unwatch


def _dynamo_compiled_something() -> bool:
    from rooflinectl.capture.run.modules import _dynamo_compiled_something as compiled

    return compiled()


class _Installed:
    """The mode on this thread's stack, and the ways to take it off (once)."""

    def __init__(self, mode: SourceMode, metadata: dict[str, Any]) -> None:
        self.mode = mode
        self.thread = threading.get_ident()
        self.on = False
        self.metadata = metadata
        self.callback: Callable[..., None] | None = None
        self.unwatch: Callable[[], None] = lambda: None

    def push(self) -> None:
        torch._C._push_on_torch_function_stack(self.mode)
        self.on = True
        self.callback = lambda *_args: self.off("stopped at the first torch.compile: Dynamo guards on "
                                                "torch function modes, so the mode left before it compiled")
        self.unwatch = _when_imported(CALLBACK_MODULE, self._register)

    def _register(self, module: Any) -> None:
        """Dynamo's compile-start callbacks run before it reads the mode stack (torch >= 2.4)."""
        handler = getattr(module, "callback_handler", None)
        if handler is not None and hasattr(handler, "register_start_callback") and self.callback is not None:
            handler.register_start_callback(self.callback)

    def off(self, why: str = "") -> None:
        """Stop annotating and take the mode off the stack (only from its own thread: modes are per
        thread; from another, or while torch holds it off the stack to run its handler, it stays
        inert until the session's end takes it off)."""
        if not self.on:
            return
        if why and self.mode.active:
            self.metadata["status"], self.metadata["why"] = "stopped", why
        self.mode.active = False
        if threading.get_ident() != self.thread:
            return
        stack = [torch._C._get_function_stack_at(i) for i in range(torch._C._len_torch_function_stack())]
        if not any(m is self.mode for m in stack):
            return
        self.on = False
        others = []
        while stack:
            top = torch._C._pop_torch_function_stack()
            stack.pop()
            if top is self.mode:
                break
            others.append(top)
        for mode in reversed(others):  # the user's own modes above ours go back as they were
            torch._C._push_on_torch_function_stack(mode)

    def remove_callback(self) -> None:
        """Dynamo's callback and the import watch go (the step limit's stop, the session's end)."""
        self.unwatch()
        handler = getattr(sys.modules.get(CALLBACK_MODULE), "callback_handler", None)
        if self.callback is not None and handler is not None:
            with suppress(ValueError, KeyError, AttributeError):  # already gone
                handler.remove_start_callback(self.callback)
            self.callback = None


@contextmanager
def source_lines(metadata: dict[str, Any]) -> Iterator[Callable[[], None]]:
    """Annotate each torch call with the user's source line while the block runs; the block gets a
    function that takes the mode off (the step limit's stop). metadata[METADATA_KEY] gets the
    status (on, off, stopped), why when not on, the working directory and the locations."""
    info: dict[str, Any] = {"status": "off", "root": os.path.realpath(os.getcwd()), "locations": []}
    metadata[METADATA_KEY] = info
    if not _ENABLED[0]:
        info["why"] = "turned off (--no-source)"
    elif _RecordFunctionFast is None:
        info["why"] = "this torch has no _RecordFunctionFast"
    elif _dynamo_compiled_something():
        info["why"] = ("torch.compile ran before profiling: a torch function mode would make Dynamo "
                       "compile again, so no source lines")
    if "why" in info:
        yield lambda: None
        return
    roots = [os.getcwd()] + ([sys.path[0]] if sys.path and sys.path[0] and os.path.isdir(sys.path[0]) else [])
    table = SourceTable(_Files(roots))
    info["status"], info["locations"] = "on", table.locations
    installed = _Installed(SourceMode(table), info)
    installed.push()
    _CURRENT.append(table)

    def off() -> None:
        installed.off()
        installed.remove_callback()
        if table in _CURRENT:
            _CURRENT.remove(table)

    try:
        yield off
    finally:
        off()
