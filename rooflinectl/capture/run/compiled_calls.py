"""Calls of torch.compile'd graphs, seen as they happen (`profile --profile-steps`).

A loop over a compiled *function* makes no eager nn.Module call and may step no optimizer, so
step_limit.py has nothing else to count its iterations by. Inductor runs every compiled graph
through `CompiledFxGraph.__call__` (torch/_inductor/output_code.py; under the profiler that call
records the "## Call CompiledFxGraph <key> ##" annotation that attribution/iterations.py counts
after the run). While watched, that method is wrapped: the wrapper tells us which graph is about
to run, then runs it unchanged.

We never import Inductor for this (it costs about a second): if the module is not imported yet, a
meta path finder wraps the method as the program's first torch.compile imports it. Undoing
restores the method and removes the finder. A torch without that class or method is simply
not watched.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

OUTPUT_CODE_MODULE = "torch._inductor.output_code"
GRAPH_CLASS = "CompiledFxGraph"


class _PatchingLoader(importlib.abc.Loader):
    """The module's own loader, then the patch once the module has run."""

    def __init__(self, inner: Any, after: Callable[[ModuleType], None]) -> None:
        self._inner = inner
        self._after = after

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._inner.exec_module(module)
        self._after(module)

    def __getattr__(self, name: str) -> Any:  # get_source, is_package, ...: the real loader's
        return getattr(self._inner, name)


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: hands the module's real spec back with a loader that patches it."""

    def __init__(self, module_name: str, after: Callable[[ModuleType], None]) -> None:
        self.module_name = module_name
        self.after = after

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.module_name:
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _PatchingLoader(spec.loader, self.after)
                return spec
        return None


def watch_calls(on_call: Callable[[Any], None], module_name: str = OUTPUT_CODE_MODULE,
                class_name: str = GRAPH_CLASS) -> Callable[[], None]:
    """Call on_call(graph) before each call of a compiled graph (class_name.__call__ of
    module_name), now or once the module is imported; returns what undoes it (safe to call twice).
    on_call never raises into the program: an exception in it is dropped."""
    patched: list[tuple[type, Any, Any]] = []  # (class, original __call__, wrapper)

    def patch(module: ModuleType) -> None:
        cls = getattr(module, class_name, None)
        original = getattr(cls, "__dict__", {}).get("__call__")
        if not isinstance(cls, type) or not callable(original) or patched:
            return

        @functools.wraps(original)
        def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
            with contextlib.suppress(Exception):  # a count of ours must never fail the user's program
                on_call(self)
            return original(self, *args, **kwargs)

        cls.__call__ = __call__  # type: ignore[method-assign, operator]
        patched.append((cls, original, __call__))

    finder: _PatchOnImport | None = None
    if module_name in sys.modules:
        patch(sys.modules[module_name])
    else:
        finder = _PatchOnImport(module_name, patch)
        sys.meta_path.insert(0, finder)

    def undo() -> None:
        if finder is not None and finder in sys.meta_path:
            sys.meta_path.remove(finder)
        while patched:
            cls, original, wrapper = patched.pop()
            if cls.__dict__.get("__call__") is wrapper:  # not replaced since by someone else
                cls.__call__ = original  # type: ignore[method-assign, operator]

    return undo


def graph_name(graph: Any) -> str:
    """'CompiledFxGraph' and the start of its cache key, as its profiler annotation names it."""
    key = str(getattr(graph, "_fx_graph_cache_key", "") or "")
    return f"{type(graph).__name__} {key[:12]}".strip()
