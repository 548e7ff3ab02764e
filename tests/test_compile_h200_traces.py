"""Inductor's kernels on the committed H200 traces (tests/data/h200_real, bare torch.profiler,
TORCHINDUCTOR_BENCHMARK_KERNEL=1): GPT-2 (2 layers, 4x512, bf16) forward, torch.compile default
and reduce-overhead, 3 warm-up + 3 timed calls each."""

from __future__ import annotations

import gzip
import json
import re

import pytest

from rooflinectl.attribution.calls import op_call
from rooflinectl.attribution.join import attribute
from rooflinectl.capture.read.trace import from_chrome_trace
from rooflinectl.costs.inductor import buffer_bytes, fused_ops

DATA = "tests/data/h200_real"
META = {"allow_tf32_matmul": False, "allow_tf32_cudnn": True}


def _raw(name: str) -> dict:
    with gzip.open(f"{DATA}/{name}.trace.json.gz", "rt") as handle:
        return json.load(handle)


@pytest.fixture(scope="module")
def compiled():
    raw = _raw("gpt2_fwd_compiled")
    trace = from_chrome_trace(raw)
    return raw, trace, attribute(trace, "cuda", META)


@pytest.fixture(scope="module")
def graphed():
    raw = _raw("gpt2_fwd_reduce_overhead")
    trace = from_chrome_trace(raw)
    return raw, trace, attribute(trace, "cuda", META)


def test_fused_ops_from_kernel_names() -> None:
    assert fused_ops("triton_poi_fused_add_mul_pow_tanh_view_5") == ("add", "mul", "pow", "tanh", "view")
    assert fused_ops("triton_red_fused_add_arange_embedding_native_layer_norm_unsqueeze_0") == (
        "add", "arange", "embedding", "native_layer_norm", "unsqueeze")
    assert fused_ops("triton_poi_fused__scaled_dot_product_cudnn_attention_add_arange_cat_expand_le_scalar_tensor"
                     "_split_transpose_unsqueeze_view_where_1")[:3] == ("_scaled_dot_product_cudnn_attention", "add", "arange")
    assert fused_ops("graph_0_cpp_fused_gelu_view_1") == ("gelu", "view")
    assert fused_ops("nvjet_sm90_tst_96x128") == ()


def test_benchmark_launches_while_compiling_are_not_counted(compiled) -> None:
    raw, _, attributed = compiled
    name = "triton_poi_fused_add_mul_pow_tanh_view_5"
    in_trace = sum(1 for e in raw["traceEvents"] if e.get("cat") == "kernel" and e.get("name") == name)
    counted = attributed.launches[attributed.launches["kernel"] == name]
    assert in_trace == 224  # 212 autotuning benchmarks + 2 layers x 6 calls
    assert len(counted) == 12
    device_s = sum(e["dur"] for e in raw["traceEvents"] if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")) / 1e6
    left_out_s = device_s - attributed.launches["time_s"].sum()
    assert attributed.compile_work_s == pytest.approx(left_out_s, rel=1e-6)  # all device time left out is compile work
    assert attributed.compile_work_s > 5 * attributed.launches["time_s"].sum()  # and it is most of this short run


def test_inductor_kernels_carry_inductors_bytes_and_name_their_ops(compiled) -> None:
    raw, _, attributed = compiled
    launches = attributed.launches
    inductor = launches[launches["kernel"].str.startswith("triton_")]
    assert set(inductor["cost_source"]) == {"inductor"}
    assert (launches["cost_source"] != "none").all()
    num_gb = {e["name"]: e["args"]["kernel_num_gb"] for e in raw["traceEvents"]
              if e.get("cat") == "cpu_op" and "kernel_num_gb" in e.get("args", {})}
    for row in inductor.itertuples():
        assert row.bytes == pytest.approx(num_gb[row.kernel] * 1e9)
        assert row.op == f"fused({', '.join(fused_ops(row.kernel))})"
    # pad-and-transpose of the tied embedding for the LM head: reads [50257, 768] and writes
    # [768, 50264] in bf16, by hand
    pad = inductor[inductor["kernel"] == "triton_poi_fused_mm_t_9"].iloc[0]
    assert pad["bytes"] == 50257 * 768 * 2 + 768 * 50264 * 2
    # the tanh-GELU: Inductor counts 0 FLOPs; ours: add, mul, pow, tanh, 1 each, per element of [4, 512, 3072]
    gelu = inductor[inductor["kernel"] == "triton_poi_fused_add_mul_pow_tanh_view_5"].iloc[0]
    assert gelu["flops"] == 4 * 4 * 512 * 3072
    assert "Inductor (kernel_num_gb)" in gelu["cost_note"] and "FLOPs: ours" in gelu["cost_note"]


def test_inductor_bytes_against_the_kernels_buffers(compiled) -> None:
    """Our own count of each Inductor kernel's traffic (its tensor arguments, each once) bounds
    Inductor's: at most twice ours (in-place buffers are read and written), and less where the
    kernel reads a slice or gathers rows (embedding tables, the qkv split)."""
    _, trace, _ = compiled
    checked = 0
    for op in trace.ops:
        if "kernel_num_gb" not in op.args:
            continue
        ours = buffer_bytes(op_call(op))
        inductor = op.args["kernel_num_gb"] * 1e9
        assert 0 < inductor <= 2 * ours, op.name
        if re.search(r"mm_t_9$", op.name):
            assert inductor == ours  # a pure copy: both count every element once
        checked += 1
    assert checked > 50


def test_graph_replays_take_their_ops_from_the_capture(graphed) -> None:
    raw, trace, attributed = graphed
    launches = attributed.launches
    # all costed but the input copies into the graph's static buffers: a _foreach_copy_ over
    # int64 lists whose dtype a bare trace does not record (rooflinectl's capture does)
    unknown = launches[launches["cost_source"] == "none"]
    assert set(unknown["op"]) == {"aten::_foreach_copy_"}
    assert unknown["cost_note"].str.contains("no dtype for tensor-list elements").all()
    graph_launches = set(trace.graph_launches)
    replayed = launches[launches["cost_note"].str.contains("replayed from a CUDA graph")]
    kernels_per_replay = sum(1 for k in trace.kernels if k.correlation == min(graph_launches))
    assert kernels_per_replay == 28
    assert len(replayed) == 5 * 25  # every kernel of the 5 replays (and 3 memsets each, sized by the trace)
    triton = replayed[replayed["kernel"].str.startswith("triton_")]
    assert (triton["cost_source"] == "inductor").all()
    assert (triton["op"] == triton["kernel"].map(lambda k: f"fused({', '.join(fused_ops(k))})")).all()
    gemms = replayed[replayed["op"] == "aten::addmm"]
    assert len(gemms) == 5 * 8 and (gemms["flops"] > 0).all()
    # per replay, the measured kernel time is close to the script's own CUDA-event time per
    # iteration (record.log: median 0.504 ms): the replays are the timed iterations
    per_replay_s = replayed.groupby(replayed["launch_ns"])["time_s"].sum()
    assert len(per_replay_s) == 5
    assert per_replay_s.median() == pytest.approx(0.504e-3, rel=0.1)
