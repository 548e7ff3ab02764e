"""nn.Module scopes opened two ways (torch's `_RecordFunctionFast`, the default, and the dispatched
record-function ops, the fallback) give the same module paths, and a scope is read as a scope
whichever category the profiler gave its event (`cpu_op` for the fast one, `user_annotation` for
the ops and in traces recorded before), never as an op that does work."""

from __future__ import annotations

import contextlib

import pytest
import torch

from rooflinectl.attribution.join import attribute
from rooflinectl.capture.read.identities import identity_candidates
from rooflinectl.capture.read.trace import from_chrome_trace
from rooflinectl.capture.run import modules
from rooflinectl.capture.run.region import MODULE_PREFIX
from rooflinectl.capture.run.session import export_trace, profiling

WAYS = [pytest.param(True, id="fast"), pytest.param(False, id="ops")]


def _mlp() -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8))
    return model, torch.randn(4, 16, requires_grad=True)


@pytest.mark.parametrize("fast", WAYS)
def test_the_switch_picks_the_record_function(monkeypatch, fast) -> None:
    """The raw event of a scope: `cpu_op` from _RecordFunctionFast, `user_annotation` from the ops
    (so the two ways below really are two different recordings)."""
    monkeypatch.setattr(modules, "FAST_SCOPES", fast)
    model, x = _mlp()
    prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True)
    with prof, modules.module_scopes():
        model(x)
    scopes = {e["name"]: e["cat"] for e in export_trace(prof)["traceEvents"]
              if str(e.get("name", "")).startswith(MODULE_PREFIX)}
    expected = "cpu_op" if fast else "user_annotation"
    assert scopes == {f"{MODULE_PREFIX}Sequential{p}": expected for p in ("", ".0", ".1", ".2")}


def _module_by_op(fast: bool, monkeypatch) -> list[tuple[str, str]]:
    monkeypatch.setattr(modules, "FAST_SCOPES", fast)
    model, x = _mlp()
    with profiling("cpu") as capture:
        model(x).sum().backward()
    scopes = [op for op in capture.trace.ops if op.name.startswith(MODULE_PREFIX)]
    assert len(scopes) == 4 and {op.category for op in scopes} == {"user_annotation"}
    launches = attribute(capture.trace, "cpu", capture.metadata).launches
    assert not launches["op"].str.startswith(MODULE_PREFIX).any()  # a scope is no unit of work
    return list(zip(launches["op"], launches["module"]))


def test_fast_and_op_scopes_give_the_same_module_paths(monkeypatch) -> None:
    fast, ops = _module_by_op(True, monkeypatch), _module_by_op(False, monkeypatch)
    assert fast == ops
    forward = [row for row in fast if row[1].startswith("Sequential") and not row[1].endswith("(backward)")]
    assert forward == [("aten::addmm", "Sequential.0"), ("aten::relu", "Sequential.1"), ("aten::addmm", "Sequential.2")]
    backward = {module for _, module in fast if module.endswith("(backward)")}
    assert backward == {"Sequential.0 (backward)", "Sequential.1 (backward)", "Sequential.2 (backward)"}


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


@pytest.mark.parametrize("fast", WAYS)
def test_a_scope_left_open_by_a_raising_forward_is_closed(monkeypatch, fast) -> None:
    monkeypatch.setattr(modules, "FAST_SCOPES", fast)
    """On Python >= 3.12 (sys.monitoring) a raising frame sends no PY_RETURN, only PY_UNWIND; below
    3.12 the global hooks close the scope themselves (always_call). Two calls: the second must not
    run inside the first's dead scope."""
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


@pytest.mark.parametrize("fast", WAYS)
def test_exit_closes_the_scopes_left_open_above_it(fast) -> None:
    """What sys.monitoring gives when a forward raises (no return event for it; global hooks,
    used below Python 3.12, close it themselves): the caller's exit closes both, inner first."""
    outer, inner = torch.nn.Linear(2, 2), torch.nn.ReLU()
    scopes = modules._Scopes(fast=fast)
    prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
    with prof:
        scopes.enter(outer, key=1)
        scopes.enter(inner, key=2)
        scopes.exit(3)  # a key never entered: nothing closes
        assert len(scopes.stack()) == 2
        scopes.exit(1)
        assert scopes.stack() == []
    events = {e["name"]: e for e in export_trace(prof)["traceEvents"] if str(e.get("name", "")).startswith(MODULE_PREFIX)}
    outer_event, inner_event = events[f"{MODULE_PREFIX}Linear"], events[f"{MODULE_PREFIX}ReLU"]
    assert outer_event["ts"] <= inner_event["ts"]
    assert inner_event["ts"] + inner_event["dur"] <= outer_event["ts"] + outer_event["dur"]


def _event(name: str, cat: str, ts: float, dur: float, external: int, dims: list | None = None,
           types: list | None = None) -> dict:
    args = {"External id": external}
    if dims is not None:
        args.update({"Input Dims": dims, "Input type": types, "Concrete Inputs": [""] * len(dims)})
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": args}


def _fragment(scope_category: str) -> dict:
    """A forward of Net (fc: x @ W.T + b, then relu) as torch.profiler writes it on a GPU machine,
    the two module scopes recorded in the given category; each op launches one kernel."""
    return {"traceEvents": [
        _event(f"{MODULE_PREFIX}Net", scope_category, 100.0, 100.0, 1),
        _event(f"{MODULE_PREFIX}Net.fc", scope_category, 110.0, 40.0, 2),
        _event("aten::addmm", "cpu_op", 120.0, 20.0, 3, [[32], [4, 16], [16, 32]], ["float", "float", "float"]),
        _event("aten::relu", "cpu_op", 160.0, 10.0, 4, [[4, 32]], ["float"]),
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 125.0, "dur": 5.0,
         "args": {"External id": 3, "correlation": 30}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 162.0, "dur": 5.0,
         "args": {"External id": 4, "correlation": 40}},
        {"ph": "X", "cat": "kernel", "name": "gemm_kernel", "pid": 0, "tid": 7, "ts": 300.0, "dur": 8.0,
         "args": {"External id": 3, "correlation": 30, "grid": [1, 1, 1], "block": [128, 1, 1]}},
        {"ph": "X", "cat": "kernel", "name": "relu_kernel", "pid": 0, "tid": 7, "ts": 310.0, "dur": 2.0,
         "args": {"External id": 4, "correlation": 40, "grid": [1, 1, 1], "block": [128, 1, 1]}},
    ]}


@pytest.mark.parametrize("category", ["cpu_op", "user_annotation"])
@pytest.mark.parametrize("device", ["cuda", "cpu"])
def test_a_scope_event_is_a_module_scope_whatever_its_category(category, device) -> None:
    trace = from_chrome_trace(_fragment(category))
    assert [(op.name, op.category) for op in trace.ops[:2]] == [
        (f"{MODULE_PREFIX}Net", "user_annotation"), (f"{MODULE_PREFIX}Net.fc", "user_annotation")]
    assert identity_candidates(trace) == []  # no tensor identities looked up for a scope
    launches = attribute(trace, device, {}).launches
    assert list(zip(launches["op"], launches["module"])) == [("aten::addmm", "Net.fc"), ("aten::relu", "Net")]
    addmm = launches.iloc[0]
    assert (addmm["flops"], addmm["cost_source"]) == (2 * 4 * 32 * 16, "analytic")  # 2*M*N*K, from the op alone


def test_a_kernel_launched_straight_from_a_scope_keeps_its_launch_time_and_module() -> None:
    """A kernel launched with no op around it inside a module (a user's Triton kernel) cites the
    scope as its External id when the scope is a `cpu_op` (kineto links kernels to the innermost
    non-user record function): the kernel belongs to that module, and it is counted by when it
    was launched (inside the region), not by when the scope began (before the region)."""
    events = [
        _event(f"{MODULE_PREFIX}Net", "cpu_op", 100.0, 100.0, 1),
        _event("rooflinectl.region:step", "user_annotation", 150.0, 40.0, 2),
        {"ph": "X", "cat": "cuda_runtime", "name": "cuLaunchKernel", "pid": 1, "tid": 1, "ts": 160.0, "dur": 5.0,
         "args": {"External id": 1, "correlation": 50}},
        {"ph": "X", "cat": "kernel", "name": "my_triton_kernel", "pid": 0, "tid": 7, "ts": 300.0, "dur": 8.0,
         "args": {"External id": 1, "correlation": 50, "grid": [4, 1, 1], "block": [128, 1, 1]}},
    ]
    launches = attribute(from_chrome_trace({"traceEvents": events}), "cuda", {}).launches
    assert list(zip(launches["kernel"], launches["op"], launches["module"])) == [("my_triton_kernel", "", "Net")]
    assert launches["launch_ns"].iloc[0] == 60_000  # the launch call, 60 us after the trace's first event


@pytest.mark.gpu
@pytest.mark.triton
@pytest.mark.parametrize("fast", WAYS)
def test_gpu_kernels_carry_their_module_either_way(monkeypatch, fast) -> None:
    """On the GPU: a cuBLAS GEMM (launched by aten::addmm) is in Sequential.0 both ways; a Triton
    kernel launched straight from Sequential.1's forward (no op around it) is in Sequential.1 with
    fast scopes, because kineto links kernels to a non-user record function (the op scopes are
    user annotations, which kernels never cite: such a kernel had no module before)."""
    import triton
    import triton.language as tl

    import rooflinectl

    @triton.jit
    def double_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2.0, mask=mask)

    class Double(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = torch.empty_like(x)
            double_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
            return y

    monkeypatch.setattr(modules, "FAST_SCOPES", fast)
    model = torch.nn.Sequential(torch.nn.Linear(256, 256), Double()).cuda()
    x = torch.randn(64, 256, device="cuda")

    def step() -> None:
        with torch.no_grad():
            model(x)

    table = rooflinectl.profile(step, warmup=2, iters=3).kernels
    assert set(table[table["op"] == "aten::addmm"]["module"]) == {"Sequential.0"}, table.to_string()
    triton_rows = table[table["kernel"] == "double_kernel"]
    assert triton_rows["calls"].sum() == 3, table.to_string()
    if fast:
        assert set(triton_rows["module"]) == {"Sequential.1"}, table.to_string()
