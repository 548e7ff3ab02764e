"""Collect the costs the reference kernels declare, launch by launch, read the way `rooflinectl
profile` reads them.

On a GPU this is the profiler's own hook (rooflinectl/capture/run/triton_hook.py `triton_launches`:
Triton builds the launch_metadata dict only while a launch-enter hook is set, the route Proton
takes too), so each launch arrives as the profile's summary of its declaration
(`summarise_declaration`). Triton's interpreter calls no launch hooks, so under
TRITON_INTERPRET=1 each reference kernel gets a pre-run hook that calls its launch_metadata
function with the launch's arguments (grid and compiled metadata are None there; our cost
functions read neither) and summarises the dict with the same function.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rooflinectl.capture.run.triton_hook import summarise_declaration, triton_launches
from rooflinectl_kernels.registry import interpreting

_ACTIVE: list[list[dict[str, Any]]] = []  # sinks of the recordings in progress (interpreter path)


def jit_function(kernel: Any) -> Any:
    """The jitted function under autotune/heuristics wrappers (each keeps it in `.fn`)."""
    from triton.runtime.autotuner import Autotuner, Heuristics

    while isinstance(kernel, (Autotuner, Heuristics)):
        kernel = kernel.fn
    return kernel


def _interpreted_kernels() -> Iterator[Any]:
    from triton.runtime.interpreter import InterpretedFunction

    for name, module in list(sys.modules.items()):
        if not name.startswith("rooflinectl_kernels.") or module is None:
            continue
        for value in vars(module).values():
            base = jit_function(value)
            if isinstance(base, InterpretedFunction) and base.kwargs.get("launch_metadata"):
                yield base


def _install_interpreter_hooks() -> None:
    for base in _interpreted_kernels():
        if getattr(base, "_rooflinectl_declares", False):
            continue
        signature = inspect.signature(base.fn)
        cost_fn = base.kwargs["launch_metadata"]

        def hook(*args: Any, _signature=signature, _cost=cost_fn, **kwargs: Any) -> None:
            if not _ACTIVE:
                return
            bound = _signature.bind_partial(*args, **kwargs)
            bound.apply_defaults()
            summary = summarise_declaration(dict(_cost(None, None, dict(bound.arguments))))
            if summary is None:
                return
            for sink in _ACTIVE:
                sink.append(dict(summary))

        base.add_pre_run_hook(hook)
        base._rooflinectl_declares = True


@contextmanager
def recording(sink: list[dict[str, Any]]) -> Iterator[None]:
    """While active, append the profile's summary of each reference kernel's launch's declared cost
    (capture/run/triton_hook.py `summarise_declaration`) to `sink`."""
    if not interpreting():
        with triton_launches(sink):
            yield
        return
    _install_interpreter_hooks()
    _ACTIVE.append(sink)
    try:
        yield
    finally:
        _ACTIVE.remove(sink)
