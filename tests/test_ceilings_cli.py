"""`rooflinectl ceilings` through CliRunner on CPU: table, JSON, cache, refresh, errors."""

from __future__ import annotations

import io
import json

import pytest
from click.testing import CliRunner
from rich.console import Console

from rooflinectl.ceilings import current_ceilings, resolve_device_kind
from rooflinectl.ceilings.build import apply_measurements, gpu_spec_ceilings
from rooflinectl.ceilings.detect import merge_gpu_info
from rooflinectl.ceilings.measurement import Measurement
from rooflinectl.cli.ceilings_cmd import command
from rooflinectl.errors import UsageError
from rooflinectl.outputs.ceilings_table import render_ceilings


@pytest.fixture()
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("ROOFLINECTL_CACHE_DIR", str(tmp_path))
    return tmp_path


@pytest.fixture()
def fake_cpu_steps(monkeypatch):
    """Replace the ~2 s of CPU measuring with fixed figures; counts how often it ran."""
    import rooflinectl.ceilings.measure_cpu as measure_cpu

    calls = []

    def steps(threads: int, llc_bytes: int | None = None):
        calls.append(threads)
        return [("fake", lambda: [Measurement("dram.copy", 30e9, "bytes/s", "fake copy"),
                                  Measurement("simt.fp32", 200e9, "flop/s", "fake mm, the fastest of 3 calls"),
                                  Measurement("launch.empty_kernel", 2e-6, "s", "fake op"),
                                  Measurement("cache.copy", 200e9, "bytes/s", "fake cache copy")])]

    monkeypatch.setattr(measure_cpu, "cpu_steps", steps)
    return calls


def test_cpu_without_cache_answers_with_labelled_estimates(cache_dir) -> None:
    result = CliRunner().invoke(command, ["--device", "cpu"])
    assert result.exit_code == 0, result.output
    assert "estimate" in result.output and "--measure" in result.output, result.output
    c = current_ceilings("cpu")
    assert c.dram().source == "estimate" and c.details["cache"] is None


def test_json_has_ceilings_and_ridge_points(cache_dir) -> None:
    result = CliRunner().invoke(command, ["--device", "cpu", "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["ceilings"]["device_kind"] == "cpu"
    ridges = {(p["compute"], p["memory"]): p["intensity_flop_per_byte"] for p in data["ridge_points"]}
    c = data["ceilings"]
    expected = c["compute_flops_per_s"]["simt.fp32"]["value"] / c["memory_bytes_per_s"]["dram"]["value"]
    assert ridges[("simt.fp32", "dram")] == pytest.approx(expected)


def test_measure_caches_and_profiles_then_use_it(cache_dir, fake_cpu_steps) -> None:
    runner = CliRunner()
    first = runner.invoke(command, ["--device", "cpu", "--measure"])
    assert first.exit_code == 0, first.output
    assert len(fake_cpu_steps) == 1 and list(cache_dir.glob("ceilings-cpu-*.json"))
    c = current_ceilings("cpu")  # what the profiler calls: measured values, no measuring
    assert c.dram().value == 30e9 and c.dram().source == "measured"
    assert c.compute_roof("simt", "fp32").source == "measured"
    assert c.compute_roof("simt", "fp64").source == "estimate"
    assert c.kernel_floor_s.value == 2e-6
    assert current_ceilings("cpu", use_measured=False).dram().source == "estimate"
    again = runner.invoke(command, ["--device", "cpu", "--measure"])
    assert again.exit_code == 0 and len(fake_cpu_steps) == 1, "cached: no second measurement"
    refreshed = runner.invoke(command, ["--device", "cpu", "--measure", "--refresh"])
    assert refreshed.exit_code == 0 and len(fake_cpu_steps) == 2, refreshed.output


def test_a_corrupt_cache_file_is_ignored(cache_dir, fake_cpu_steps) -> None:
    CliRunner().invoke(command, ["--device", "cpu", "--measure"])
    for path in cache_dir.glob("ceilings-cpu-*.json"):
        path.write_text("{not json")
    assert current_ceilings("cpu").dram().source == "estimate"


def test_cuda_without_a_gpu_is_one_sentence_and_exit_3(cache_dir) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    result = CliRunner().invoke(command, ["--device", "cuda"])
    assert result.exit_code == 3, result.output
    assert "CUDA is not available" in result.output and "Traceback" not in result.output


def test_bad_device_kind() -> None:
    with pytest.raises(UsageError):
        resolve_device_kind("tpu")
    result = CliRunner().invoke(command, ["--device", "tpu"])
    assert result.exit_code == 2, result.output


def test_table_shows_flags_with_clocks_and_what_was_missing() -> None:
    torch_fields = {"name": "NVIDIA H200", "compute_capability": (9, 0), "sms": 132,
                    "max_sm_clock_hz": 1980e6, "l2_bytes": 60 * 2**20}
    c = gpu_spec_ceilings(merge_gpu_info(0, torch_fields, None, {}, "NVML unavailable (test)"))
    c = apply_measurements(c, [Measurement("tensor.int8", 125e12, "flop/s", "torch._int_mm",
                                           clocks={"sm_clock_mhz": 1530, "throttle_reasons": ["sw_power_cap"]}),
                               Measurement("tensor.bf16", 768e12, "flop/s", "torch.mm")])
    out = io.StringIO()
    Console(file=out, width=200).print(render_ceilings(c))
    text = out.getvalue()
    assert "FLAG tensor.int8" in text and "1530 MHz" in text and "sw_power_cap" in text, text
    assert "NVML unavailable (test)" in text, text
    assert "Ridge points" in text and "71.7%" in text, text  # 768 / (132 x 4096 x 1.98 GHz)


def test_the_tables_fit_80_columns_like_show() -> None:
    """At 80 columns (COLUMNS=80) no line is longer, every roof and measurement name stays whole on
    its line, and `% of spec` is what gives way, not the text squeezed to a word per line."""
    torch_fields = {"name": "NVIDIA H200", "compute_capability": (9, 0), "sms": 132,
                    "max_sm_clock_hz": 1980e6, "l2_bytes": 60 * 2**20}
    c = gpu_spec_ceilings(merge_gpu_info(0, torch_fields, None, {}, "NVML unavailable (test)"))
    c = apply_measurements(c, [Measurement("tensor.bf16", 768e12, "flop/s", "torch.mm (bf16) 8192x8192x8192, median "
                                           "of 30, three buffers rotated so that L2 holds none of them"),
                               Measurement("launch.empty_kernel", 6.4e-7, "s", "profiler GPU duration of "
                                           "torch.cuda._sleep(0), median of 200")])
    out = io.StringIO()
    Console(file=out, width=80).print(render_ceilings(c, 80))
    lines = out.getvalue().splitlines()
    assert max(len(line.rstrip()) for line in lines) <= 80, "\n".join(lines)
    names = [*(f"memory.{k}" for k in c.memory_bytes_per_s), *c.compute_flops_per_s, "launch.empty_kernel"]
    for name in names:
        assert any(line.startswith(name + " ") for line in lines), (name, "\n".join(lines))
    roofs_header = next(line for line in lines if line.startswith("ceiling "))
    assert "how" in roofs_header and "% of spec" not in roofs_header
    bf16 = [i for i, line in enumerate(lines) if line.startswith("tensor.bf16 ")]
    assert "132 SMs" in lines[bf16[0]]  # the roofs table: the clock-scaled spec is the roof
    assert "torch.mm (bf16)" in lines[bf16[1]]  # the compute table: the achievable figure and how it was measured  # the text keeps a readable width (was 20 characters, 7 lines)
    wide = io.StringIO()
    Console(file=wide, width=200).print(render_ceilings(c, 200))
    assert "% of spec" in wide.getvalue()  # room for every column: nothing gives way


def test_a_cpu_cache_from_before_the_cache_roof_gets_it_measured_once(cache_dir, monkeypatch) -> None:
    """A cached CPU measurement without the cache roof (made before it existed) is completed by
    measuring only that step, once; the next call reads it from the cache."""
    import rooflinectl.ceilings.measure_cpu as measure_cpu
    from rooflinectl.ceilings import measure_ceilings

    monkeypatch.setattr(measure_cpu, "cpu_steps", lambda threads, llc=None: [
        ("fake", lambda: [Measurement("dram.copy", 30e9, "bytes/s", "fake copy")])])
    calls = []
    monkeypatch.setattr(measure_cpu, "measure_cache", lambda threads, llc: calls.append(llc) or [
        Measurement("cache.copy", 300e9, "bytes/s", "fake cache copy")])
    first = measure_ceilings("cpu")
    assert "cache" not in first.memory_bytes_per_s and calls == []
    second = measure_ceilings("cpu")
    assert second.memory_bytes_per_s["cache"].value == 300e9 and len(calls) == 1
    assert measure_ceilings("cpu").memory_bytes_per_s["cache"].value == 300e9 and len(calls) == 1


def test_a_cpu_matmul_roof_of_the_older_method_is_measured_again_once(cache_dir, monkeypatch) -> None:
    """The fp32 roof cached from the median call of one 2048-square (real matmuls beat it) is
    measured again, alone, and replaced; the next call reads the new figure from the cache."""
    import rooflinectl.ceilings.measure_cpu as measure_cpu
    from rooflinectl.ceilings import measure_ceilings

    old = "torch.mm 2048x2048x2048 NN fp32, 2 threads, best median of NN/NT/TN, 3 calls"
    calls = []
    made_before = [("fake", lambda: [Measurement("dram.copy", 30e9, "bytes/s", "fake copy"),
                                     Measurement("cache.copy", 300e9, "bytes/s", "fake cache copy"),
                                     Measurement("simt.fp32", 75e9, "flop/s", old)])]
    monkeypatch.setattr(measure_cpu, "cpu_steps", lambda threads, llc=None: made_before)
    assert measure_ceilings("cpu").compute_roof("simt", "fp32").value == 75e9  # cached as an older version did
    monkeypatch.setattr(measure_cpu, "cpu_steps", lambda threads, llc=None: made_before + [
        ("CPU fp32 matmul", lambda: calls.append("fp32") or [
            Measurement("simt.fp32", 150e9, "flop/s", "torch.mm ..., the fastest of 20 calls")])])
    second = measure_ceilings("cpu")
    assert second.compute_roof("simt", "fp32").value == 150e9 and calls == ["fp32"]
    assert second.memory_bytes_per_s["dram"].value == 30e9  # the rest kept
    assert measure_ceilings("cpu").compute_roof("simt", "fp32").value == 150e9 and calls == ["fp32"]
