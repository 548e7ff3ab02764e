"""nn.Module scopes in the trace, so kernels can be shown by module path, invisible to torch.compile.

Each eager `nn.Module` call opens a profiler annotation named after the module's path. The
mechanism must never change what the user's program does: global module hooks make Dynamo
trace them (and fail with "UnspecializedNNModuleVariable ... is already tracked for mutation").
- Python >= 3.12: `sys.monitoring` local events on the code of `nn.Module._call_impl` only. They
  fire when that code really runs (eager calls); Dynamo reads bytecode and never runs it while
  tracing, and compiled graphs do not call modules, so compilation sees nothing at all. A forward
  that raises sends no PY_RETURN: PY_UNWIND (a global event, filtered to that code) closes it.
- Python < 3.12 (no local events): global forward hooks whose body returns at once while Dynamo
  traces them (`torch.compiler.is_compiling()`), so they add nothing to a compiled graph; Dynamo
  still guards on the hooks being there, which is why function mode installs them before its
  warm-up (a graph compiled without them would compile again once they appear).
Modules called inside a compiled region get no scope of their own: their kernels carry the
scope of the eager module around the region and the names of the aten ops Inductor fused.
Paths come from the outermost module called: its `named_modules()` names every submodule; a
`torch.compile`d module (OptimizedModule) is named after the module it wraps.

A scope is opened with torch's `_RecordFunctionFast` (what Dynamo and AOTAutograd use for their
own annotations), not with the two dispatched `torch.ops.profiler` record-function ops that
torch.profiler.record_function calls: under a profiler recording shapes, an enter + exit costs
2.4 us against 27.6 us on the H200 machine's host (Python 3.12), 0.6 us against 9 us on the CPU
machine (docs/benchmarks/steady-state.md), paid at every module call of a launch-bound step.
Its event is recorded as a `cpu_op`, not a `user_annotation`: the trace parser reads scopes by
their name whatever the category (capture/read/builder.py). The ops remain the fallback for a torch
without it.
"""

from __future__ import annotations

import sys
import threading
import warnings
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch

from rooflinectl.capture.run.region import MODULE_PREFIX

# torch warns, once per compiled module, that global hooks fire once more for OptimizedModule:
# true of any global hook, and not the user's concern here (our hooks name modules only).
_HOOK_WARNING = r"Using `torch\.compile\(module\)` when there are global hooks"
_WRAPPER_ATTRIBUTE = "_orig_mod"  # torch._dynamo's OptimizedModule keeps the compiled module here


def _unwrapped(module: torch.nn.Module) -> torch.nn.Module:
    inner = getattr(module, _WRAPPER_ATTRIBUTE, None)
    return inner if isinstance(inner, torch.nn.Module) else module


class _ModuleNames:
    """Module -> scope name (MODULE_PREFIX + path), learnt from the outermost module called
    (weakly held: no module is kept alive). Names are built once, not at every call."""

    def __init__(self) -> None:
        self.names: weakref.WeakKeyDictionary[torch.nn.Module, str] = weakref.WeakKeyDictionary()

    def scope_name(self, module: torch.nn.Module, outermost: bool) -> str:
        known = self.names.get(module)
        if known is not None:
            return known
        if outermost:
            root = type(_unwrapped(module)).__name__
            for qualname, sub in module.named_modules():
                path = ".".join(p for p in qualname.split(".") if p != _WRAPPER_ATTRIBUTE)
                self.names.setdefault(sub, f"{MODULE_PREFIX}{root}.{path}" if path else f"{MODULE_PREFIX}{root}")
        return self.names.get(module, f"{MODULE_PREFIX}{type(module).__name__}")


# torch's cheap record function (torch >= 2.2; private, hence looked up rather than imported).
_RecordFunctionFast = getattr(torch._C._profiler, "_RecordFunctionFast", None)
# Whether scopes use it; module_scopes() reads this when it starts (tests switch it to compare).
FAST_SCOPES = _RecordFunctionFast is not None


def _open_fast(name: str) -> Any:
    scope = _RecordFunctionFast(name)  # type: ignore[misc]
    scope.__enter__()
    return scope


def _close_fast(scope: Any) -> None:
    scope.__exit__(None, None, None)


def _open_op(name: str) -> Any:
    """The record function as torch.profiler.record_function opens it: a user_annotation event."""
    return torch.ops.profiler._record_function_enter_new(name, None)


def _close_op(handle: Any) -> None:
    torch.ops.profiler._record_function_exit._RecordFunction(handle)


class _Scopes:
    """Per-thread stacks of open annotations (record functions are thread-local)."""

    def __init__(self, fast: bool, on_outermost: Callable[[torch.nn.Module], None] | None = None) -> None:
        self.names = _ModuleNames()
        self.on_outermost = on_outermost
        self.local = threading.local()
        self.open, self.close = (_open_fast, _close_fast) if fast else (_open_op, _close_op)

    def stack(self) -> list[tuple[int, Any]]:
        stack = getattr(self.local, "stack", None)
        if stack is None:
            stack = self.local.stack = []
        return stack

    def enter(self, module: torch.nn.Module, key: int) -> None:
        stack = self.stack()
        if not stack and self.on_outermost is not None:
            self.on_outermost(module)
        stack.append((key, self.open(self.names.scope_name(module, outermost=not stack))))

    def exit(self, key: int | None) -> None:
        """Close the scope opened for `key` (None: the innermost), and any left open above it by
        a forward that raised (no return event came for those)."""
        stack = self.stack()
        if stack and stack[-1][0] == key:  # the usual case: the innermost scope returns
            self.close(stack.pop()[1])
            return
        if key is not None and all(k != key for k, _ in stack):
            return
        while stack:
            k, handle = stack.pop()
            self.close(handle)
            if key is None or k == key:
                return

    def close_all(self) -> None:
        while self.stack():
            self.exit(None)


_TOOL_NAME = "rooflinectl"
_active: list[_Scopes] = []  # the installed scopes (module_scopes is re-entrant: inner uses are no-ops)


@contextmanager
def _monitored(scopes: _Scopes) -> Iterator[Callable[[], None]]:
    monitoring = sys.monitoring  # type: ignore[attr-defined]
    tool = next((t for t in range(1, 6) if monitoring.get_tool(t) is None), None)
    if tool is None:  # every tool id taken (debuggers, coverage, profilers): no module names
        yield lambda: None
        return
    code = torch.nn.Module._call_impl.__code__
    events = monitoring.events

    def on_start(_code: Any, _offset: int) -> None:
        frame = sys._getframe(1)
        module = frame.f_locals.get("self")
        if isinstance(module, torch.nn.Module):
            scopes.enter(module, id(frame))

    def on_return(_code: Any, _offset: int, _value: Any) -> None:
        scopes.exit(id(sys._getframe(1)))

    def on_unwind(unwound: Any, _offset: int, _exception: BaseException) -> None:
        # a forward that raised returns no PY_RETURN: close its scope here, or a caller that
        # catches the exception would run its next modules inside the dead module's scope
        if unwound is code:
            scopes.exit(id(sys._getframe(1)))

    def off() -> None:  # no events at all from here on (no guard of Dynamo's depends on them)
        monitoring.set_events(tool, 0)
        monitoring.set_local_events(tool, code, 0)

    monitoring.use_tool_id(tool, _TOOL_NAME)
    try:
        monitoring.register_callback(tool, events.PY_START, on_start)
        monitoring.register_callback(tool, events.PY_RETURN, on_return)
        monitoring.register_callback(tool, events.PY_UNWIND, on_unwind)
        monitoring.set_local_events(tool, code, events.PY_START | events.PY_RETURN)
        monitoring.set_events(tool, events.PY_UNWIND)  # not a local event: every frame, checked above
        yield off
    finally:
        off()
        monitoring.register_callback(tool, events.PY_START, None)
        monitoring.register_callback(tool, events.PY_RETURN, None)
        monitoring.register_callback(tool, events.PY_UNWIND, None)
        monitoring.free_tool_id(tool)


def _dynamo_compiled_something() -> bool:
    """Whether Dynamo has compiled a graph in this process (its own counters; private, so read
    defensively: unknown counts as yes)."""
    utils = sys.modules.get("torch._dynamo.utils")
    if utils is None:
        return False
    try:
        return bool(utils.counters["stats"]["unique_graphs"])
    except Exception:  # noqa: BLE001 - a torch without these counters
        return True


@contextmanager
def _hooked(scopes: _Scopes) -> Iterator[Callable[[], None]]:
    enabled = [True]
    handles: list[Any] = []

    def off() -> None:
        """No more scopes. The hooks go, unless Dynamo compiled something while they were there:
        it guards on global hooks, so removing them would compile that again (0.8 s on a small
        model); then they stay and return at once (a hook call costs about 2 us a module call:
        +25% on a CPU step of 91 module calls, but compiled code calls no hook)."""
        enabled[0] = False
        if not _dynamo_compiled_something():
            for handle in handles:
                handle.remove()

    def pre_hook(module: torch.nn.Module, _inputs: Any) -> None:
        # is_compiling() first: Dynamo, tracing the hook, then never reads (nor guards on) enabled
        if torch.compiler.is_compiling() or not enabled[0]:  # traced by Dynamo: leave nothing in the graph
            return
        scopes.enter(module, id(module))

    def post_hook(module: torch.nn.Module, _inputs: Any, _output: Any) -> None:
        if torch.compiler.is_compiling() or not enabled[0]:
            return
        scopes.exit(id(module))

    pre = torch.nn.modules.module.register_module_forward_pre_hook(pre_hook)
    post = torch.nn.modules.module.register_module_forward_hook(post_hook, always_call=True)
    handles += [pre, post]
    warnings.filterwarnings("ignore", message=_HOOK_WARNING, category=UserWarning)
    ours = warnings.filters[0]
    try:
        yield off
    finally:
        pre.remove()
        post.remove()
        if ours in warnings.filters:
            warnings.filters.remove(ours)
            warnings._filters_mutated()  # type: ignore[attr-defined]  # what filterwarnings itself calls


def uses_monitoring() -> bool:
    """Whether module scopes come from sys.monitoring (Python >= 3.12) rather than global hooks."""
    return hasattr(sys, "monitoring")


@contextmanager
def module_scopes(on_outermost: Callable[[torch.nn.Module], None] | None = None) -> Iterator[Callable[[], None]]:
    """Annotate every eager nn.Module call while the block runs (nested uses share the outer one).

    on_outermost(module) is called at each eager call of a module that no other module called
    (capture/run/step_limit.py finds the top-level module so). The block gets a function that turns
    the scopes off for the rest of it (`--profile-steps` after its stop): sys.monitoring's events
    are switched off; global hooks are removed, or return at once where Dynamo has compiled."""
    if _active:
        yield lambda: None
        return
    scopes = _Scopes(fast=FAST_SCOPES and _RecordFunctionFast is not None, on_outermost=on_outermost)
    _active.append(scopes)
    mechanism = _monitored if uses_monitoring() else _hooked
    try:
        with mechanism(scopes) as off:
            yield off
    finally:
        scopes.close_all()
        _active.clear()
