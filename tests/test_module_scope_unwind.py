"""A module whose forward raises, inside a caller that catches the exception: its scope must end
where the module ended, so the caller's next modules are not shown inside it. On Python >= 3.12
(sys.monitoring) a raising frame sends no PY_RETURN, only PY_UNWIND; below 3.12 the global hooks
close the scope themselves (always_call)."""

from __future__ import annotations

import contextlib

import torch

from rooflinectl.attribution.join import attribute
from rooflinectl.capture.region import MODULE_PREFIX
from rooflinectl.capture.session import profiling


class _Raises(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise ValueError("no")


class _Recovers(torch.nn.Module):
    """Calls a child that raises, catches it, then calls another child."""

    def __init__(self) -> None:
        super().__init__()
        self.bad, self.good = _Raises(), torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with contextlib.suppress(ValueError):
            self.bad(x)
        return self.good(x)


def test_a_scope_left_open_by_a_raising_forward_is_closed() -> None:
    model, x = _Recovers(), torch.randn(2, 4)
    with profiling("cpu") as capture:
        model(x)
        model(x)
    launches = attribute(capture.trace, "cpu", capture.metadata).launches
    assert list(zip(launches["op"], launches["module"])) == [("aten::addmm", "_Recovers.good")] * 2
    scopes = {name: [op for op in capture.trace.ops if op.name == f"{MODULE_PREFIX}{name}"]
              for name in ("_Recovers", "_Recovers.bad", "_Recovers.good")}
    assert [len(v) for v in scopes.values()] == [2, 2, 2]
    for outer, bad, good in zip(*scopes.values()):
        assert bad.end_ns <= good.ts_ns  # closed before the next call, not wrapped around it
        assert outer.ts_ns <= bad.ts_ns and good.end_ns <= outer.end_ns  # the caller's scope still holds both
