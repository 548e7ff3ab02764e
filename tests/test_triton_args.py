"""An undeclared Triton kernel's minimum bytes from its launch's arguments (capture/run/triton_args.py),
read through the profiler's own launch hook, joined to the traced kernel (attribution/declared.py)
and held to the memory roof with a lower-bound efficiency (analysis/roofline.py).

Triton's interpreter (TRITON_INTERPRET=1, set by conftest on a CPU machine) runs no
CompiledKernel and calls no launch hook, so the hook path is driven here with Triton's own
CompiledKernel.launch_metadata on a stand-in kernel object; tests/test_user_kernels_gpu.py runs
real launches on a GPU."""

from __future__ import annotations

import math

import pytest
import torch

from rooflinectl.analysis.roofline import lower_bound_rows, place_on_roofline
from rooflinectl.attribution.group import group_launches
from rooflinectl.attribution.join import attribute
from rooflinectl.capture.read.raw import RawKernel, RawTrace
from rooflinectl.capture.run.triton_args import (
    argument_bytes,
    argument_declaration,
)
from rooflinectl.capture.run.triton_hook import summarise_declaration, triton_launches
from tests.advice_tables import h200_ceilings

triton = pytest.importorskip("triton")


def test_contiguous_tensors_count_their_bytes_and_scalars_nothing() -> None:
    x, y, out = torch.empty(1000), torch.empty(1000), torch.empty(1000)
    total, shapes, dtype = argument_bytes((x, y, out, 1000, 3.5, None, True, "s"))
    assert total == 3 * 1000 * 4
    assert [list(s) for s in shapes] == [[1000]] * 3 and dtype == "fp32"


def test_a_view_counts_the_span_of_the_view_not_its_storage() -> None:
    base = torch.empty(100, 64, dtype=torch.bfloat16)
    assert argument_bytes((base[10:20],))[0] == 10 * 64 * 2  # rows 10..19: contiguous
    # first 8 columns of every row: from element (0, 0) to (99, 7), gaps included
    assert argument_bytes((base[:, :8],))[0] == (99 * 64 + 8) * 2
    assert argument_bytes((base.t(),))[0] == 100 * 64 * 2  # a transpose spans the same bytes
    assert argument_bytes((base[::2, 0],))[0] == (49 * 128 + 1) * 2  # one element every other row
    assert argument_bytes((torch.empty(0), base[:0]))[0] == 0


def test_aliases_of_one_storage_count_once() -> None:
    x = torch.empty(1024)
    assert argument_bytes((x, x, x))[0] == 1024 * 4  # in place: input and output are one tensor
    assert argument_bytes((x[:600], x[400:]))[0] == 1024 * 4  # overlapping views: their union
    assert argument_bytes((x[:256], x[512:768]))[0] == 512 * 4  # disjoint views of one storage: each span
    assert argument_bytes((x.view(32, 32), x.view(-1)[:32]))[0] == 1024 * 4  # a view inside another
    assert argument_bytes((x, x[10:20], x[100:]))[0] == 1024 * 4  # views inside the whole
    other = torch.empty(1024)
    assert argument_bytes((x, other))[0] == 2 * 1024 * 4


def test_tuples_of_tensors_and_the_widest_dtype() -> None:
    small, big = torch.empty(10, dtype=torch.float32), torch.empty(1000, dtype=torch.bfloat16)
    total, shapes, dtype = argument_bytes(((small, big), 7))
    assert total == 40 + 2000 and len(shapes) == 2 and dtype == "bf16"


def test_no_tensor_gives_no_bytes() -> None:
    declaration = argument_declaration((1, 2.0))
    assert declaration["bytes"] is None
    assert summarise_declaration({"name": "k", **declaration}) is None


class _Fn:
    def __init__(self, launch_metadata: object = None) -> None:
        self.launch_metadata = launch_metadata


def _source(fn: _Fn) -> object:
    """An ASTSource (what Triton compiled the kernel from) holding fn, without compiling."""
    from triton.compiler.compiler import ASTSource

    src = object.__new__(ASTSource)
    src.fn = fn
    return src


class _Kernel:
    """Enough of a CompiledKernel for Triton's own launch_metadata to run on CPU."""

    def __init__(self, name: str, fn: _Fn | None = None, arg_names: tuple[str, ...] = ()) -> None:
        fn = fn or _Fn()
        fn.arg_names = list(arg_names)  # type: ignore[attr-defined]
        self.name, self.function, self.metadata, self.src = name, None, None, _source(fn)

    def _init_handles(self) -> None:
        pass


def _launch(kernel: _Kernel, *args: object) -> None:
    """What Triton's JITFunction.run does per launch: the metadata, then the enter hook."""
    from triton import knobs
    from triton.compiler.compiler import CompiledKernel

    lazy = CompiledKernel.launch_metadata(kernel, (1, 1, 1), 0, *args)
    knobs.runtime.launch_enter_hook(lazy)


def test_the_launch_hook_records_argument_bytes_for_undeclared_kernels_only() -> None:
    from triton.compiler.compiler import CompiledKernel

    original = CompiledKernel.launch_metadata
    x, y = torch.empty(256), torch.empty(256)
    sink: list[dict] = []
    with triton_launches(sink):
        _launch(_Kernel("add_kernel"), x, y, y, 256, 1024)  # in place: y is read and written
        _launch(_Kernel("triton_poi_fused_add_0"), x, y, 256)  # Inductor's: its own annotations
        declared = _Fn(lambda grid, metadata, args: {"name": "mine", "flops32": 256, "bytes": 2048})
        _launch(_Kernel("mine", declared, ("x", "y")), x, y)  # declares its cost: read as declared
        _launch(_Kernel("add_kernel"), x, y, y, 256, 1024)  # the same launch again: one summary kept
    assert CompiledKernel.launch_metadata is original  # nothing of ours stays installed
    assert [s["name"] for s in sink] == ["add_kernel", "mine", "add_kernel"] and sink[2] is sink[0]
    assert sink[0]["from_arguments"] and sink[0]["bytes"] == 2 * 256 * 4 and sink[0]["flops"] is None
    assert not sink[1].get("from_arguments") and sink[1]["bytes"] == 2048


def _trace(summaries: list[dict], name: str = "add_kernel", dur_ns: int = 100_000) -> RawTrace:
    kernels = [RawKernel(name=name, category="kernel", ts_ns=1_000_000 * i, dur_ns=dur_ns, external_id=-1,
                         correlation=i + 1, grid=(4096, 1, 1), block=(128, 1, 1), registers_per_thread=24,
                         shared_memory=0) for i in range(len(summaries))]
    return RawTrace(ops=[], kernels=kernels, launch_ts_ns={i + 1: 1_000_000 * i for i in range(len(summaries))},
                    triton_launches=summaries)


def test_argument_bytes_hold_the_kernel_to_the_memory_roof_as_a_lower_bound() -> None:
    n = 1 << 20
    summary = summarise_declaration({"name": "add_kernel", **argument_declaration(
        (torch.empty(n), torch.empty(n), torch.empty(n), n))})
    launches = attribute(_trace([summary, summary]), "cuda", {}).launches
    assert set(launches["cost_source"]) == {"triton-args"}
    assert (launches["bytes"] == 3 * n * 4).all() and launches["flops"].isna().all()
    assert "minimum from arguments" in launches["cost_note"].iloc[0]
    assert launches["origin"].iloc[0] == "triton" and launches["shapes"].iloc[0] == f"[{n}], [{n}], [{n}]"
    table, _ = group_launches(launches)
    placed = place_on_roofline(table.assign(rank=0), h200_ceilings())
    row = placed.iloc[0]
    assert row["bound"] == "memory" and math.isnan(row["intensity"]) and math.isnan(row["attainable_flops_per_s"])
    expected_roof_s = 2 * 3 * n * 4 / 4.8e12  # two calls' bytes at the DRAM roof
    assert row["roof_time_s"] == pytest.approx(expected_roof_s)
    assert row["efficiency"] == pytest.approx(expected_roof_s / 200e-6)
    assert bool(lower_bound_rows(placed).iloc[0])
    text = _rendered(placed)
    assert f">={row['efficiency']:.1%}" in text and "memory" in text and "nan" not in text


def _rendered(table) -> str:
    import io

    from rich.console import Console

    from rooflinectl.outputs.table import kernel_table

    console = Console(file=io.StringIO(), width=200)
    console.print(kernel_table(table))
    return console.file.getvalue()


def _summary(n: int, captured: bool = False) -> dict:
    summary = summarise_declaration({"name": "add_kernel", **argument_declaration((torch.empty(n), torch.empty(n)))})
    return {**summary, "captured": True} if captured else summary


def _graph_trace(summaries: list[dict], replays: int, eager_after: int) -> RawTrace:
    """One eager launch, then `replays` replays of a graph (one kernel each), then eager launches."""
    correlations = [1] + [10 + r for r in range(replays)] + [100 + i for i in range(eager_after)]
    kernels = [RawKernel(name="add_kernel", category="kernel", ts_ns=1_000_000 * i, dur_ns=1000, external_id=-1,
                         correlation=c) for i, c in enumerate(correlations)]
    return RawTrace(ops=[], kernels=kernels, launch_ts_ns={c: 1_000_000 * i for i, c in enumerate(correlations)},
                    triton_launches=summaries, graph_launches=[10 + r for r in range(replays)])


def test_graph_replays_take_the_cost_recorded_at_capture_and_eager_launches_their_own() -> None:
    # launch order on the host: eager (8 elements), capture (16), eager (32); the captured launch runs no kernel
    trace = _graph_trace([_summary(8), _summary(16, captured=True), _summary(32)], replays=2, eager_after=1)
    launches = attribute(trace, "cuda", {}).launches
    assert list(launches["bytes"]) == [2 * 8 * 4, 2 * 16 * 4, 2 * 16 * 4, 2 * 32 * 4]
    assert [("CUDA graph" in note) for note in launches["cost_note"]] == [False, True, True, False]


def test_a_graph_captured_in_every_iteration_keeps_its_one_cost() -> None:
    trace = _graph_trace([_summary(16, captured=True), _summary(16, captured=True)], replays=2, eager_after=0)
    launches = attribute(trace, "cuda", {}).launches.iloc[1:]
    assert list(launches["bytes"]) == [2 * 16 * 4] * 2


def test_graphs_that_captured_a_kernel_with_different_costs_leave_its_replays_unknown() -> None:
    trace = _graph_trace([_summary(16, captured=True), _summary(64, captured=True)], replays=1, eager_after=0)
    replayed = attribute(trace, "cuda", {}).launches.iloc[1]
    assert replayed["cost_source"] == "none"
