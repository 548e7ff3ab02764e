"""torch.compile under rooflinectl on CPU: capture changes nothing the program computes, eager
modules keep their names, and Inductor's C++ kernels count as work with costs.

The Dynamo tests use backend="eager" (Dynamo's tracing is what global hooks broke; no C++
compile needed, about a second). One test compiles with Inductor (a few seconds cold).
"""

from __future__ import annotations

import json

import pytest
import torch

import rooflinectl
from rooflinectl.attribution.join import attribute
from rooflinectl.capture.run.inductor import parse_wrapper
from rooflinectl.capture.run.modules import module_scopes
from rooflinectl.capture.run.session import load_capture, profiling


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(32, 4, 64, batch_first=True, dropout=0.0)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False))


def _compiled_steps(model: torch.nn.Module, x: torch.Tensor) -> list[torch.Tensor]:
    """torch.compile of a module (forward and backward) and of a function, as users write them."""
    torch._dynamo.reset()
    out = torch.compile(model, backend="eager")(x)
    out.sum().backward()
    grad = model[0].weight.grad.clone()
    model.zero_grad()
    fn = torch.compile(lambda a: torch.nn.functional.gelu(model[0](a)) * 2, backend="eager")
    return [out.detach(), grad, fn(x).detach()]


@pytest.mark.slow
def test_compiled_module_and_function_unchanged_under_module_scopes() -> None:
    from torch._dynamo.utils import counters

    model, x = _model(), torch.randn(2, 8, 16)
    plain = _compiled_steps(model, x)
    counters.clear()
    with profiling("cpu") as capture:  # module scopes are on, as in every profile
        scoped = _compiled_steps(model, x)
        model[0](x)  # an eager call
    for a, b in zip(plain, scoped):
        assert torch.equal(a, b)
    assert dict(counters["graph_break"]) == {}  # the hooks/monitoring left nothing Dynamo traced
    assert counters["frames"]["ok"] == counters["frames"]["total"] == 2
    names = {op.name for op in capture.trace.ops if op.name.startswith("rooflinectl.module:")}
    assert "rooflinectl.module:Sequential.0" in names  # the eager call is named by its path
    assert "rooflinectl.module:Sequential" in names  # the compiled module's own call, named after it


def test_module_scopes_are_reentrant_and_close() -> None:
    model = torch.nn.Sequential(torch.nn.Linear(4, 4))
    with profiling("cpu") as capture, module_scopes():
        model(torch.randn(2, 4))
    scopes = [op for op in capture.trace.ops if op.name.startswith("rooflinectl.module:")]
    assert [op.name for op in scopes] == ["rooflinectl.module:Sequential", "rooflinectl.module:Sequential.0"]


def test_inductor_settings_are_restored() -> None:
    import os

    before = os.environ.get("TORCHINDUCTOR_BENCHMARK_KERNEL")
    with profiling("cpu"):
        assert os.environ["TORCHINDUCTOR_BENCHMARK_KERNEL"] == "1"
        assert os.environ["TORCHINDUCTOR_CPP_ENABLE_KERNEL_PROFILE"] == "1"
    assert os.environ.get("TORCHINDUCTOR_BENCHMARK_KERNEL") == before


WRAPPER = '''
cpp_fused_gelu_view_1 = async_compile.cpp_pybinding(['float*'], r\'\'\'
#include <torch/csrc/inductor/cpp_prefix.h>
extern "C"  void  kernel(float* in_out_ptr0)
{
    torch::aot_inductor::RAIIAtenRecordFunctionHandle record_graph_0_cpp_fused_gelu_view_1_("graph_0_cpp_fused_gelu_view_1", nullptr);
}
\'\'\')
cpp_fused_add_2 = async_compile.cpp_pybinding(['float*', 'const float*', 'const int64_t*'], r\'\'\'
extern "C"  void  kernel(float* out_ptr0,
                       const float* in_ptr0,
                       const int64_t* in_ptr1)
{
}
\'\'\')
    def call(self, args):
        assert_size_stride(arg2_1, (8, 32, 64), (2048, 64, 1), 'input')
        buf4 = empty_strided_cpu((256, 256), (256, 1), torch.float32)
        buf5 = reinterpret_tensor(buf4, (8, 32, 256), (8192, 256, 1), 0); del buf4  # reuse
        cpp_fused_gelu_view_1(buf5)
        buf6 = buf5x[0]
        assert_size_stride(buf6, (4, 4), (4, 1), 'extern')
        buf7 = buf6; del buf6  # reuse
        cpp_fused_add_2(buf7, arg2_1, arg3_1)
def get_args():
    arg3_1 = rand_strided((4, ), (1, ), device='cpu', dtype=torch.int64)
'''


def test_parse_wrapper_reads_buffers_roles_and_event_names() -> None:
    kernels = parse_wrapper(WRAPPER)
    gelu = kernels["graph_0_cpp_fused_gelu_view_1"]  # keyed by the profiler event's name
    assert gelu == {"kernel": "cpp_fused_gelu_view_1",
                    "buffers": [{"shape": [8, 32, 256], "dtype": "float32", "role": "in_out"}]}
    add = kernels["cpp_fused_add_2"]["buffers"]  # no record function: keyed by the kernel's name
    assert add == [{"shape": [4, 4], "dtype": "float32", "role": "out"},
                   {"shape": [8, 32, 64], "dtype": "float32", "role": "in"},
                   {"shape": [4], "dtype": "int64", "role": "in"}]


def test_committed_cpu_compiled_capture_counts_cpp_kernels_with_costs() -> None:
    """examples/compile_compare.py --compile default --layers 1 --seq 32 --batch 2, profiled on
    CPU with --save-capture: the C++ kernels are units of work with Inductor-sourced costs."""
    capture = load_capture("tests/data/cpu_compiled.capture.json.gz")
    launches = attribute(capture.trace, "cpu", capture.metadata).launches
    generated = launches[launches["kernel"].str.contains("cpp_fused")]
    assert len(generated) == 4 * 3  # four C++ kernels per step, three steps in the region
    assert set(generated["cost_source"]) == {"inductor"} and set(generated["origin"]) == {"inductor"}
    assert (launches["cost_source"] != "none").all()
    gelu = generated[generated["kernel"] == "graph_0_cpp_fused_gelu_view_2"].iloc[0]
    # in-place GELU over [2, 32, 256] fp32: read and write 16384 x 4 bytes; 5 FLOP per element (ours)
    assert gelu["op"] == "fused(gelu, view)"
    assert gelu["bytes"] == 2 * 16384 * 4
    assert gelu["flops"] == 5 * 16384
    assert gelu["module"] == "TinyGPT"  # the compiled module's eager scope


@pytest.mark.slow
def test_inductor_compiled_function_profiles_with_costs() -> None:
    """A function compiled by Inductor's CPU backend (C++ kernel), profiled through the API."""
    torch._dynamo.reset()

    def fn(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(a * 2 + b)

    compiled = torch.compile(fn)
    a, b = torch.randn(64, 128), torch.randn(64, 128)
    expected = fn(a, b)
    profile = rooflinectl.profile(compiled, a, b, warmup=1, iters=2)
    assert torch.allclose(compiled(a, b), expected, atol=1e-5)
    kernels = profile.kernels
    fused = kernels[kernels["kernel"].str.contains("cpp_fused")]
    assert len(fused) == 1, kernels[["kernel", "op"]]
    row = fused.iloc[0]
    assert row["cost_source"] == "inductor" and row["calls"] == 2
    assert row["op"] == "fused(add, gelu, mul)"
    # reads a and b, writes the output, fp32, per call; FLOPs: add 1 + gelu 5 + mul 1 per element
    assert row["bytes"] == pytest.approx(2 * 3 * 64 * 128 * 4)
    assert row["flops"] == pytest.approx(2 * 7 * 64 * 128)
    assert profile.summary["known_cost_time_share"] == 1.0
    json.dumps(profile.summary)  # the summary stays plain data
