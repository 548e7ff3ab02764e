"""The steady state end to end: setup on its own line and out of the table and the advice, host
transfers against the host link, host-side causes of idle time, and the CLI controls."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from advice_tables import h200_ceilings, profile, row
from click.testing import CliRunner
from real_traces import raw_json, timed_median_s, trace
from rich.console import Console

from rooflinectl.analysis.advice import advise
from rooflinectl.analysis.host_time import host_figures
from rooflinectl.capture.read.raw import RawOp, RawSync, RawTrace
from rooflinectl.capture.run.region import MODULE_PREFIX
from rooflinectl.capture.run.session import Capture
from rooflinectl.ceilings.model import Ceilings, Roof
from rooflinectl.cli.main import main
from rooflinectl.outputs.profile_file import load_profile, save_profile
from rooflinectl.outputs.table import render_profile
from rooflinectl.pipeline import profile_data
from rooflinectl.schema import SUMMARY_KEYS

H200 = h200_ceilings()
H200.memory_bytes_per_s["host_pinned"] = Roof(53e9, "measured")
H200.memory_bytes_per_s["host_pageable"] = Roof(20e9, "measured")


@pytest.fixture(scope="module")
def gpt2():
    return profile_data(Capture("cuda", trace("gpt2_fwd_eager"), {}), command=["t"], completed=True, ceilings=H200)


def _raw_copies(name: str, prefix: tuple[str, ...]) -> list[dict]:
    return [e for e in raw_json(name)["traceEvents"] if e.get("cat") == "gpu_memcpy" and e["name"].startswith(prefix)]


def test_setup_is_apart_from_the_table(gpt2) -> None:
    """The weight upload (28 pageable HtoD copies) and the output read-back are setup; the table
    holds the forward's kernels, the same number of calls in every iteration."""
    s = gpt2.summary
    assert s["iterations_method"] == "kernel_sequence" and s["iterations"] == 6
    assert not gpt2.kernels["kernel"].str.startswith("Memcpy").any()
    transfers = _raw_copies("gpt2_fwd_eager", ("Memcpy HtoD", "Memcpy DtoH"))
    assert s["setup_transfer_bytes"] == sum(e["args"]["bytes"] for e in transfers)
    assert s["setup_transfer_time_s"] == pytest.approx(sum(e["dur"] for e in transfers) / 1e6, rel=1e-6)
    assert (gpt2.kernels["calls"] % s["iterations"] == 0).all()
    assert s["launches"] + s["setup_launches"] == len(trace("gpt2_fwd_eager").kernels)
    assert s["iteration_time_s"] == pytest.approx(timed_median_s("gpt2_fwd_eager"), rel=0.05)
    assert s["window_s"] == pytest.approx(sum(s["iteration_times_s"]))


def test_summary_and_table_say_it(gpt2) -> None:
    console = Console(file=io.StringIO(), width=200)
    console.print(render_profile(gpt2, gpt2.kernels, top=3, include_setup=True))
    text = console.file.getvalue()
    assert "steady state: 6 iteration(s) of 7 found by repeated kernel sequences" in text
    assert "1 warm-up set apart" in text
    setup_line = next(line for line in text.splitlines() if line.startswith("setup (outside the steady state"))
    assert "107 MB" in setup_line  # the host transfers' bytes, 107,122,200
    assert "calls/it" in text and "time/it" in text
    assert "Memcpy HtoD" in text.split(setup_line)[1]  # the setup table lists the upload


def test_every_summary_key_is_documented(gpt2) -> None:
    undocumented = set(gpt2.summary) - set(SUMMARY_KEYS)
    assert not undocumented, f"document in schema.SUMMARY_KEYS: {sorted(undocumented)}"


def test_profile_file_keeps_the_setup_table(gpt2, tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    save_profile(gpt2, path)
    back = load_profile(path)
    assert back.setup_kernels is not None
    assert len(back.setup_kernels) == len(gpt2.setup_kernels)
    assert back.setup_kernels["time_s"].sum() == pytest.approx(gpt2.setup_kernels["time_s"].sum())


def test_advice_comes_from_the_steady_state_only(gpt2) -> None:
    """Over the whole run the weight upload and the start-up idle time (seconds of model
    construction) dominate; in the steady state neither may appear."""
    whole = profile_data(Capture("cuda", trace("gpt2_fwd_eager"), {}), command=["t"], completed=True,
                         ceilings=H200, iterations_mode="none")
    assert whole.summary["iterations_method"] == "off"
    assert whole.kernels["kernel"].str.startswith("Memcpy HtoD").any()
    steady = advise(gpt2)
    assert all("Memcpy" not in f.subject for f in steady.findings)
    graph = steady.findings_of("launch.overhead")
    assert all(f.est_saving_s <= gpt2.summary["device_idle_s"] for f in graph)
    assert advise(whole).findings_of("launch.overhead")[0].est_saving_s > 50 * gpt2.summary["window_s"]


def test_host_transfers_are_held_against_the_host_link() -> None:
    """A pageable HtoD copy of 1 GB in 0.1 s: 10 GB/s against the 20 GB/s pageable roof = 50%,
    not 10 GB/s against 4.8 TB/s DRAM."""
    copy = row("aten::copy_", "copy", "", flops=0.0, bytes_=1e9, time_s=0.1, dtype="",
               kernel="Memcpy HtoD (Pageable -> Device)")
    pinned = dict(copy, kernel="Memcpy DtoH (Device -> Pinned)")
    device = dict(copy, kernel="Memcpy DtoD (Device -> Device)")
    data = profile([copy, pinned, device], ceilings=H200)
    eff = dict(zip(data.kernels["kernel"], data.kernels["efficiency"]))
    assert eff["Memcpy HtoD (Pageable -> Device)"] == pytest.approx(1e9 / 20e9 / 0.1)
    assert eff["Memcpy DtoH (Device -> Pinned)"] == pytest.approx(1e9 / 53e9 / 0.1)
    assert eff["Memcpy DtoD (Device -> Device)"] == pytest.approx(1e9 / 4.8e12 / 0.1)
    (finding,) = advise(data).findings_of("transfer.pageable")
    assert finding.est_saving_s == pytest.approx(0.1 - 1e9 / 53e9)
    assert "pin_memory" in finding.recommendation and "non_blocking=True" in finding.recommendation


def test_sync_idle_is_measured_from_the_trace() -> None:
    """Kernels [0,100] and [400,500] ns, a cudaStreamSynchronize by aten::_local_scalar_dense at
    120..300 ns: the device sat idle from 100 (last end) to 400 (next start) = 300 ns, of which
    the host was blocked 180 ns: the sync cost 180 ns (the rest the host would have spent anyway)."""
    import pandas as pd

    from rooflinectl.capture.read.raw import RawOp

    item = RawOp(external_id=7, name="aten::_local_scalar_dense", category="cpu_op", tid=1, ts_ns=110, dur_ns=200)
    t = RawTrace(ops=[item], kernels=[], launch_ts_ns={},
                 syncs=[RawSync("cudaStreamSynchronize", 120, 180, 7, 1)])
    launches = pd.DataFrame({"launch_ns": [0, 350], "start_ns": [0, 400], "end_ns": [100, 500], "kernel": ["a", "b"]})
    figures = host_figures(t, launches, [(0, 600)])
    assert figures["host_sync_calls"] == 1
    assert figures["host_sync_idle_s"] == pytest.approx(180e-9)
    # the host waited 110 ns (120..230) for a kernel running until 200; the next started at 260: 60 ns idle
    busy = pd.DataFrame({"launch_ns": [0, 240], "start_ns": [0, 260], "end_ns": [200, 300], "kernel": ["a", "b"]})
    waited = RawTrace(ops=[item], kernels=[], launch_ts_ns={}, syncs=[RawSync("cudaStreamSynchronize", 120, 110, 7, 1)])
    assert host_figures(waited, busy, [(0, 600)])["host_sync_idle_s"] == pytest.approx(60e-9)
    assert figures["host_sync_ops"] == [["aten::_local_scalar_dense", 1]]
    assert figures["host_outside_ops_s"] == pytest.approx((600 - 200) * 1e-9)


def test_syncs_in_the_loop_are_their_own_finding() -> None:
    rows = [row("aten::mm", "gemm", "[64, 64] x [64, 64]", flops=1e9, bytes_=1e6, time_s=1e-3, calls=10)]
    summary = {"window_s": 4e-3, "device_idle_s": 3e-3, "host_sync_idle_s": 2.5e-3, "host_sync_calls": 10,
               "host_sync_s": 2e-3, "host_sync_ops": [["aten::_local_scalar_dense", 10]], "iterations": 10,
               "launches": 10, "short_launches": 0}
    report = advise(profile(rows, summary=summary))
    (sync,) = report.findings_of("host.sync")
    assert sync.est_saving_s == pytest.approx(2.5e-3)
    assert "aten::_local_scalar_dense x10" in sync.evidence
    (graph,) = report.findings_of("launch.overhead")  # 0.5 ms idle is left for a graph to save
    assert graph.est_saving_s == pytest.approx(0.5e-3 - 10 * 1e-6)
    summary["host_sync_idle_s"] = 2.9e-3  # then only 0.1 ms (2.5% of the window): no graph finding
    assert not advise(profile(rows, summary=summary)).findings_of("launch.overhead")


def test_real_syncs_are_found_in_the_moe_trace() -> None:
    """moe_loop: .tolist() on the counts calls aten::_local_scalar_dense -> cudaStreamSynchronize;
    counted over the whole run (the setup), 6 of them, as the raw trace says."""
    raw = [e for e in raw_json("moe_loop")["traceEvents"] if e.get("name") == "cudaStreamSynchronize"]
    whole = profile_data(Capture("cuda", trace("moe_loop"), {}), command=["t"], completed=True, ceilings=H200,
                         iterations_mode="none")
    ops = dict((name, n) for name, n in whole.summary["host_sync_ops"])
    assert ops["aten::_local_scalar_dense"] == 6
    assert whole.summary["host_sync_calls"] >= len(raw)


def _invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def test_iterations_option_rejects_nonsense(tmp_path: Path) -> None:
    script = tmp_path / "s.py"
    script.write_text("print('hi')\n")
    result = _invoke("profile", str(script), "--iterations", "some", "--device", "cpu")
    assert result.exit_code == 2
    assert "is not auto, none or a positive number" in result.output


LOOP = """
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 256))
x = torch.randn(1024, 256)
with torch.no_grad():
    for _ in range(7):
        model(x)
"""


def test_repeated_module_calls_on_cpu(tmp_path: Path) -> None:
    """A plain script calling its model 7 times, profiled whole on CPU (`--profile-steps all`; the
    default samples 5): the module scopes mark the iterations; `--iterations 5` counts the last 5
    (their times: the test below, on given times)."""
    script, out = tmp_path / "loop.py", tmp_path / "p.json"
    script.write_text(LOOP)
    result = _invoke("profile", str(script), "-o", str(out), "--device", "cpu", "--top", "3", "--iterations", "5",
                     "--profile-steps", "all")
    assert result.exit_code == 0, result.output
    data = load_profile(out)
    s = data.summary
    assert (s["iterations_method"], s["iterations_marker"], s["iterations_found"]) == ("module_forward", "Sequential", 7)
    assert (s["iterations"], s["warmup_iterations"]) == (5, 2)
    assert len(s["iteration_times_s"]) == 5 and s["window_s"] == pytest.approx(sum(s["iteration_times_s"]))
    assert (data.kernels["calls"] == s["iterations"]).all()  # addmm, gelu, addmm: once per iteration
    show = _invoke("show", str(out), "--include-setup", "--format", "csv")
    assert show.exit_code == 0, show.output
    assert {"steady", "setup"} <= {line.rsplit(",", 1)[-1] for line in show.output.splitlines()[1:]}


def _module_loop(periods_ns: list[int]) -> tuple[RawTrace, list[int]]:
    """CPU ops of a script calling a Sequential(Linear, GELU, Linear) once per period, 1 us of Python
    between calls, as the profiler records them (module scope, then addmm, gelu, addmm); and the end
    of each call's last op."""
    ops, ends, t = [], [], 1000
    for call, period in enumerate(periods_ns):
        work = period - 1000
        third = work // 3
        ops.append(RawOp(4 * call, MODULE_PREFIX + "Sequential", "user_annotation", 1, t, work))
        for k, (name, dims) in enumerate([("aten::addmm", [[1024], [64, 256], [256, 1024]]),
                                          ("aten::gelu", [[64, 1024]]),
                                          ("aten::addmm", [[256], [64, 1024], [1024, 256]])]):
            ops.append(RawOp(4 * call + k + 1, name, "cpu_op", 1, t + k * third, third - 10, dims, ["float"] * len(dims)))
        ends.append(t + 3 * third - 10)
        t += period
    return RawTrace(ops=ops, kernels=[], launch_ts_ns={}), ends


def test_module_call_iteration_times_from_given_times() -> None:
    """The same loop on given times (no clock): two slow first calls, then five; `--iterations 5`
    counts the last 5, each from the previous call's last op end to its own (what a timer around
    each turn of the loop measures), so the times are exactly those differences."""
    periods = [9000, 6000, 5000, 5200, 4800, 5000, 5100]
    raw, ends = _module_loop(periods)
    cpu = Ceilings("cpu", "cpu", {"dram": Roof(50e9, "spec")}, {"simt.fp32": Roof(1e12, "spec")})
    data = profile_data(Capture("cpu", raw, {}), command=["t"], completed=True, ceilings=cpu, iterations_mode="5")
    s = data.summary
    assert (s["iterations_method"], s["iterations_marker"], s["iterations_found"]) == ("module_forward", "Sequential", 7)
    assert (s["iterations"], s["warmup_iterations"]) == (5, 2)
    expected = [(ends[i] - ends[i - 1]) / 1e9 for i in range(2, 7)]  # 5001, 5201, 4798, 5001, 5099 ns
    assert s["iteration_times_s"] == pytest.approx(expected, rel=1e-9)
    assert s["window_s"] == pytest.approx(sum(expected), rel=1e-9)
    assert (data.kernels["calls"] == 5).all() and len(data.kernels) == 3
    auto = profile_data(Capture("cpu", raw, {}), command=["t"], completed=True, ceilings=cpu)
    assert auto.summary["warmup_iterations"] == 2  # found: the second call (6000) is >10% slower than the rest


def _warmup_by_definition(times_s: list[float]) -> int:
    """choose_warmup's rule, a median per step (slow, obviously right)."""
    import statistics

    warmup = 1
    while warmup < len(times_s) // 2 and times_s[warmup] > 1.10 * statistics.median(times_s[warmup + 1:]):
        warmup += 1
    return warmup


@pytest.mark.parametrize("slow", [0, 3, 31, 32, 33, 120, 400])
def test_a_long_warm_up_is_found_as_the_rule_says(slow: int) -> None:
    import random

    from rooflinectl.attribution.steady import choose_warmup

    rng = random.Random(slow)
    times = [2e-5 * rng.uniform(0.95, 1.05) for _ in range(slow)] + [1e-5 * rng.uniform(0.9, 1.1) for _ in range(600)]
    assert choose_warmup(times, None) == _warmup_by_definition(times)


@pytest.mark.parametrize("n", [2, 5, 6, 51, 52])
def test_suffix_medians_are_the_medians_of_each_suffix(n: int) -> None:
    import random

    import numpy as np

    from rooflinectl.attribution.steady import _suffix_medians

    values = [random.Random(n + i).random() for i in range(n)]
    got = _suffix_medians(values, 1, n)
    assert got == {i: float(np.median(values[i:])) for i in range(1, n)}


def test_run_wall_time_spans_the_first_to_the_last_event_of_ops_and_kernels() -> None:
    from rooflinectl.capture.read.raw import RawKernel, RawOp, RawTrace
    from rooflinectl.pipeline import _run_wall_s

    ops = [RawOp(1, "aten::mm", "cpu_op", 1, 100, 50), RawOp(2, "aten::add", "cpu_op", 1, 300, 20)]
    kernels = [RawKernel("gemm", "kernel", 140, 500, 1, 11), RawKernel("add", "kernel", 660, 30, 2, 12)]
    # first: the first op's start (100 ns); last: the last kernel's end (660 + 30 ns)
    assert _run_wall_s(RawTrace(ops=ops, kernels=kernels, launch_ts_ns={})) == pytest.approx(590e-9)
    assert _run_wall_s(RawTrace(ops=ops, kernels=[], launch_ts_ns={})) == pytest.approx(220e-9)
    assert _run_wall_s(RawTrace(ops=[], kernels=[], launch_ts_ns={})) == 0.0


TWO_LOOPS = """
import torch
a = torch.randn(256, 256)
for _ in range(3):
    torch.softmax(torch.relu(a @ a) + 1, dim=-1)
b = torch.randn(16_000_000)
for _ in range(3):
    b = b * 1.0001
"""


def test_a_second_loop_that_does_most_of_the_work_is_never_dropped(tmp_path: Path) -> None:
    # issue 28: no mark of the program's, so the first loop is found as a repeated kernel
    # sequence (or the second loop is, by timings); neither holds 80% of the work, so the whole
    # run is counted (the mul and mm rows are in the table), the same way on every run, and a
    # line says why
    script = tmp_path / "two.py"
    script.write_text(TWO_LOOPS)
    methods = []
    for run in range(2):
        out = tmp_path / f"p{run}.json"
        result = CliRunner().invoke(main, ["profile", str(script), "-o", str(out), "--device", "cpu"])
        assert result.exit_code == 0, result.output
        data = load_profile(out)
        s = data.summary
        methods.append(s["iterations_method"])
        assert s["iterations_method"] == "none"
        assert int(data.kernels.loc[data.kernels["op"] == "aten::mul", "calls"].sum()) == 3
        assert int(data.kernels.loc[data.kernels["op"] == "aten::mm", "calls"].sum()) == 3
        if s.get("loop_minority"):
            assert s["loop_minority"] == "kernel_sequence" and s["loop_kernel_share"] < 0.8
            assert "phases: a repeated kernel sequence held only" in " ".join(result.output.split())
    assert methods[0] == methods[1]


def test_loop_share_counts_the_iterations_against_the_work_outside_transfers() -> None:
    import pandas as pd

    from rooflinectl.attribution.iterations import Iterations
    from rooflinectl.attribution.steady import loop_share

    launches = pd.DataFrame({"launch_ns": [0, 10, 20, 30, 40], "time_s": [5.0, 1.0, 1.0, 3.0, 4.0],
                             "kernel": ["Memcpy HtoD (Pageable -> Device)", "mm", "mm", "mul", "mul"]})
    loop = Iterations("kernel_sequence", spans_ns=[(10, 20), (20, 30)])
    assert loop_share(launches, loop) == pytest.approx(2.0 / 9.0)  # the upload is setup-like work
    assert loop_share(launches, Iterations("none")) is None
