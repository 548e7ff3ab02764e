"""nn.Module scopes in the trace, so kernels can be shown by module path.

torch.profiler's `with_modules` covers TorchScript only and `with_stack` is costly; instead a
global forward pre-hook opens a profiler annotation named after the module's path and a forward
hook (always called, also when forward raises) closes it. Paths come from the outermost module
called: its `named_modules()` names every submodule.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

from rooflinectl.capture.region import MODULE_PREFIX


class _ModuleScopes:
    def __init__(self) -> None:
        self.names: weakref.WeakKeyDictionary[torch.nn.Module, str] = weakref.WeakKeyDictionary()
        self.stack: list[Any] = []

    def pre_hook(self, module: torch.nn.Module, _inputs: Any) -> None:
        if not self.stack and module not in self.names:
            root = type(module).__name__
            for qualname, sub in module.named_modules():
                self.names.setdefault(sub, f"{root}.{qualname}" if qualname else root)
        name = self.names.get(module, type(module).__name__)
        handle = torch.ops.profiler._record_function_enter_new(f"{MODULE_PREFIX}{name}", None)
        self.stack.append(handle)

    def post_hook(self, _module: torch.nn.Module, _inputs: Any, _output: Any) -> None:
        if self.stack:
            torch.ops.profiler._record_function_exit._RecordFunction(self.stack.pop())


@contextmanager
def module_scopes() -> Iterator[None]:
    """Annotate every nn.Module forward while the block runs."""
    scopes = _ModuleScopes()
    pre = torch.nn.modules.module.register_module_forward_pre_hook(scopes.pre_hook)
    post = torch.nn.modules.module.register_module_forward_hook(scopes.post_hook, always_call=True)
    try:
        yield
    finally:
        pre.remove()
        post.remove()
