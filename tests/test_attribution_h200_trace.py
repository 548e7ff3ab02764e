"""Attribution of CUDA kernels, tested on CPU with a real trace recorded on the H200.

tests/data/h200_mlp_bf16.capture.json.gz is `examples/mlp.py --batch 256 --width 2048` (bf16,
two steps inside `rooflinectl.region("step")`), recorded by scripts/gpu.d/00-foundation.sh.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rooflinectl.capture.run.session import load_capture
from rooflinectl.ceilings.model import Ceilings, Roof
from rooflinectl.pipeline import profile_data

DATA = Path(__file__).parent / "data"
H200 = Ceilings(
    device_name="NVIDIA H200", device_kind="cuda",
    memory_bytes_per_s={"dram": Roof(4.8e12, "spec")},
    compute_flops_per_s={"tensor.bf16": Roof(989e12, "spec"), "simt.fp32": Roof(67e12, "spec")},
    kernel_floor_s=Roof(2e-6, "estimate"),
)


@pytest.fixture(scope="module")
def mlp():
    capture = load_capture(str(DATA / "h200_mlp_bf16.capture.json.gz"))
    return profile_data(capture, command=["test"], completed=True, exit_code=0, ceilings=H200)


def _dims(shapes: str) -> list[list[int]]:
    return [[int(n) for n in part.split(",")] for part in re.findall(r"\[([\d, ]+)\]", shapes)]


def test_every_kernel_in_the_region_has_a_cost(mlp) -> None:
    assert mlp.summary["known_cost_time_share"] == pytest.approx(1.0)
    assert mlp.summary["regions"] == ["step"]
    assert (mlp.kernels["device"] == "cuda").all()
    assert mlp.summary["launches"] == int(mlp.kernels["calls"].sum())
    assert len(mlp.summary["launch_sequence"]) == mlp.summary["launches"]


def test_gemm_flops_are_2mnk_per_launch(mlp) -> None:
    gemms = mlp.kernels[(mlp.kernels["op"] == "aten::mm") & (mlp.kernels["op_family"] == "gemm")]
    assert len(gemms) > 0
    by_shape = gemms.groupby("shapes")[["flops", "calls"]].sum()
    for shapes, row in by_shape.iterrows():
        (m, k), (k2, n) = _dims(shapes)
        assert k == k2
        # one mm op may launch a main kernel and a helper; their shares add up to 2*M*N*K per op call
        assert row["flops"] == pytest.approx(2 * m * n * k * _op_calls(mlp, shapes))


def _op_calls(mlp, shapes: str) -> int:
    """Op calls of aten::mm with these shapes: launches of its longest kernel (one per call)."""
    rows = mlp.kernels[(mlp.kernels["op"] == "aten::mm") & (mlp.kernels["shapes"] == shapes)]
    return int(rows.sort_values("time_s").iloc[-1]["calls"])


def test_elementwise_bytes_are_tensor_sizes(mlp) -> None:
    gelu = mlp.kernels[mlp.kernels["op"] == "aten::gelu"].iloc[0]
    (batch, hidden), = _dims(gelu["shapes"])
    assert gelu["bytes"] == pytest.approx(gelu["calls"] * 2 * batch * hidden * 2)  # read + write, bf16


def test_bounds_follow_the_roofline(mlp) -> None:
    table = mlp.kernels
    gemm = table[table["op_family"] == "gemm"]
    assert (gemm["unit"] == "tensor").all() and (gemm["precision"] == "bf16").all()
    eltwise = table[table["op_family"] == "elementwise"]
    assert set(eltwise["bound"]) <= {"memory", "latency"}
    assert not table["above_roof"].any()


def test_modules_are_named(mlp) -> None:
    forward = mlp.kernels[mlp.kernels["op"].isin(["aten::addmm", "aten::gelu", "aten::native_layer_norm"])]
    assert (forward["module"].str.startswith("Sequential")).all()


def test_naive_attention_trace() -> None:
    """scripts/bench_foundation.py's naive attention: B=8, H=16, S=2048, D=64, bf16, 3 iterations."""
    capture = load_capture(str(DATA / "h200_attention_naive_bf16.capture.json.gz"))
    data = profile_data(capture, command=["test"], completed=True, exit_code=0, ceilings=H200)
    table = data.kernels
    assert data.summary["known_cost_time_share"] == pytest.approx(1.0)
    b, h, s, d = 8, 16, 2048, 64
    bmm = table[table["op"] == "aten::bmm"]
    assert bmm["flops"].sum() == pytest.approx(3 * 2 * (2 * b * h * s * s * d))  # QK^T and PV: 2*B*H*S*S*D each
    softmax = table[table["op"] == "aten::_softmax"].iloc[0]
    assert softmax["bytes"] == pytest.approx(3 * 2 * b * h * s * s * 2)  # read + write the bf16 scores
    assert softmax["bound"] == "memory"
    memsets = table[table["kernel"].str.startswith("Memset")]
    assert (memsets["flops"] == 0).all()  # a cuBLAS workspace memset carries no GEMM FLOPs
    # the capture's profiler-overhead probe (200 tiny adds) is never counted
    assert "aten::add_" not in set(table["op"])
    # host events: the profiler events of the attention's work, counted here from the raw trace
    # (no region in this run: all of it, less the probe and its 200 adds)
    ops = capture.trace.ops
    probe = [(o.ts_ns, o.end_ns) for o in ops if o.name == "rooflinectl.calibration"]
    assert len(probe) == 1
    assert data.summary["host_events"] == len([o for o in ops if not probe[0][0] <= o.ts_ns <= probe[0][1]])


def test_idle_time_without_the_profiler(mlp) -> None:
    """Host events counted from the raw trace (inside the `step` regions, less the region markers
    and the overhead probe), each costing the probe's measured time, come off the idle time."""
    capture = load_capture(str(DATA / "h200_mlp_bf16.capture.json.gz"))
    ops = capture.trace.ops
    regions = [(o.ts_ns, o.end_ns) for o in ops if o.name == "rooflinectl.region:step"]
    probe = [(o.ts_ns, o.end_ns) for o in ops if o.name == "rooflinectl.calibration"]
    assert regions and len(probe) == 1

    def inside(ts: int, spans: list[tuple[int, int]]) -> bool:
        return any(a <= ts <= b for a, b in spans)

    events = [o for o in ops if inside(o.ts_ns, regions) and not inside(o.ts_ns, probe)
              and not o.name.startswith("rooflinectl.region:")]
    assert mlp.summary["host_events"] == len(events)
    overhead_s = mlp.metadata["profiler_overhead_per_op_s"]
    assert 0 < overhead_s < 1e-4
    expected_s = mlp.summary["device_idle_s"] - len(events) * overhead_s
    assert expected_s > 0  # not clamped: the check below sees the arithmetic
    assert mlp.summary["device_idle_unprofiled_s"] == pytest.approx(expected_s)


def test_graph_replayed_kernels_say_why_they_have_no_cost() -> None:
    from rooflinectl.attribution.join import attribute
    from rooflinectl.capture.read.trace import from_chrome_trace

    trace = from_chrome_trace({"traceEvents": [
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "ts": 10.0, "dur": 5.0,
         "args": {"correlation": 7, "External id": 0}},
        {"ph": "X", "cat": "kernel", "name": "gemmSN_TN_kernel", "ts": 20.0, "dur": 2.0,
         "args": {"correlation": 7, "External id": 0, "grid": [1, 1, 1], "block": [128, 1, 1]}},
    ]})
    launches = attribute(trace, "cuda", {}).launches
    assert launches.iloc[0]["cost_source"] == "none"
    assert "CUDA graph" in launches.iloc[0]["cost_note"]


def test_values_stay_in_the_schema_vocabularies(mlp) -> None:
    """Every value the pipeline writes is one schema.py documents (the file is a contract)."""
    from rooflinectl.schema import BOUNDS, COST_SOURCES, OP_FAMILIES, ORIGINS

    table = mlp.kernels
    assert set(table["bound"]) <= set(BOUNDS)
    assert set(table["cost_source"]) <= set(COST_SOURCES)
    assert set(table["op_family"]) <= set(OP_FAMILIES)
    assert set(table["origin"]) <= set(ORIGINS)


def test_kernel_rows_keep_the_launch_configuration_the_trace_records() -> None:
    """GPT-2's LM head (tests/data/h200_real): the row's registers per thread and shared memory per
    block are those of its kernel events in the raw trace (a legacy cutlass_75 kernel there)."""
    from real_traces import kernel_table, raw_json

    raw = raw_json("gpt2_fwd_eager")
    events = [e["args"] for e in raw["traceEvents"] if e.get("cat") == "kernel" and "cutlass_75" in e["name"]]
    assert {a["registers per thread"] for a in events} == {254} and {a["shared memory"] for a in events} == {32768}
    table, _ = kernel_table("gpt2_fwd_eager", H200)
    (head,) = table[table["kernel"].str.contains("cutlass_75")].itertuples()
    assert (head.registers_per_thread, head.shared_bytes_per_block, head.threads_per_block) == (254, 32768, 128)
    transfers = table["kernel"].str.startswith(("Memcpy", "Memset"))
    assert table.loc[transfers, "registers_per_thread"].isna().all()  # copies have no launch configuration
    assert table.loc[~transfers, "registers_per_thread"].notna().all()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["gpt2_train_eager", "resnet50_train_eager", "moe_loop"])
def test_launches_stay_in_launch_order_when_most_are_looked_up_by_kind(name: str) -> None:
    """A launch whose row repeats an earlier kind is added in a batch (records.add_kinds): the
    batch must go in before the next launch of a new kind, so the table keeps the trace's order."""
    import gzip
    import json

    from rooflinectl.attribution.join import attribute
    from rooflinectl.capture.read.trace import from_chrome_trace

    with gzip.open(DATA / "h200_real" / f"{name}.trace.json.gz", "rt") as handle:
        trace = from_chrome_trace(json.load(handle))
    launches = attribute(trace, "cuda", {"device_kind": "cuda"}).launches
    counted = set(launches["correlation"])
    assert len(counted) == len(launches) > 40
    assert launches["correlation"].tolist() == [k.correlation for k in trace.kernels if k.correlation in counted]
    assert (launches["start_ns"].diff().dropna() >= 0).all()  # the kernels are in start order too


def test_host_events_count_ops_at_a_regions_end_and_not_at_the_probes_end() -> None:
    """A region and the profiler-overhead probe are closed spans (in_window): an op starting at
    the region's last nanosecond is counted, one at the probe's last nanosecond is not."""
    from rooflinectl.attribution.op_index import OpIndex
    from rooflinectl.capture.read.raw import RawOp, RawTrace
    from rooflinectl.capture.run.region import CALIBRATION_NAME, REGION_PREFIX

    def op(name: str, ts: int, dur: int, category: str = "cpu_op") -> RawOp:
        return RawOp(external_id=-1, name=name, category=category, tid=1, ts_ns=ts, dur_ns=dur)

    ops = [op(CALIBRATION_NAME, 0, 50, "user_annotation"), op("aten::add", 10, 5), op("aten::add", 50, 5),
           op(REGION_PREFIX + "step", 100, 100, "user_annotation"), op("aten::mm", 100, 10),
           op("aten::mm", 150, 10), op("aten::mm", 200, 10), op("aten::mm", 250, 10)]
    trace = RawTrace(ops=ops, kernels=[], launch_ts_ns={})
    index = OpIndex(trace)
    expected = sum(1 for i, o in enumerate(ops) if index.in_window(o.ts_ns) and not o.name.startswith(REGION_PREFIX))
    assert expected == 3  # 100, 150, 200: the region's own annotation and the probe's ops left out
    assert index.events_in_window(trace.op_times_ns()[0]) == expected
