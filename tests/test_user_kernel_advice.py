"""Advice for a user's undeclared Triton kernels (cost from their arguments' bytes): at the memory
roof a "stop here" note that says the efficiency is a lower bound; far under it the memory-access
finding with what the launch shows (grid, block, registers, shared memory)."""

from __future__ import annotations

from typing import Any

import torch

from rooflinectl.analysis.advice import advise
from rooflinectl.attribution.group import group_launches
from rooflinectl.attribution.join import attribute
from rooflinectl.capture.read.raw import RawKernel, RawTrace
from rooflinectl.capture.run.triton_args import argument_declaration
from rooflinectl.capture.run.triton_hook import summarise_declaration
from tests.advice_tables import h200_ceilings, profile

N = 1 << 26


def args_row(name: str, efficiency: float, tensors: int = 3) -> dict[str, Any]:
    """A kernel-table row made by the attribution stage from an undeclared launch of `name` whose
    arguments are `tensors` fp32 vectors of N elements, timed to reach `efficiency`."""
    arguments = tuple(torch.empty(N, device="meta") for _ in range(tensors))
    summary = summarise_declaration({"name": name, **argument_declaration(arguments)})
    summary["bytes"] = float(tensors * N * 4)  # meta tensors share address 0: their bytes as distinct buffers
    kernel = RawKernel(name=name, category="kernel", ts_ns=0, dur_ns=1000, external_id=-1, correlation=1,
                       grid=(65536, 1, 1), block=(128, 1, 1), registers_per_thread=26, shared_memory=0)
    trace = RawTrace(ops=[], kernels=[kernel], launch_ts_ns={1: 0}, triton_launches=[summary])
    table, _ = group_launches(attribute(trace, "cuda", {}).launches)
    (out,) = table.to_dict("records")
    out.update(rank=0, time_s=None, _efficiency=efficiency)
    return out


def test_a_kernel_at_its_roof_gets_stop_here_as_a_lower_bound() -> None:
    report = advise(profile([args_row("add_kernel", 0.92), args_row("softmax_kernel", 0.88, tensors=2)],
                            ceilings=h200_ceilings()))
    # notes of one rule are merged into one finding (analysis/advice/merge.py): its instances are the kernels
    (merged,) = [f for f in report.findings if f.rule_id == "roof.stop-here"]
    stops = {f.subject: f for f in (merged.instances or (merged,))}
    assert set(stops) == {"add_kernel", "softmax_kernel"} and merged.count == 2
    assert "92.0% or more" in stops["add_kernel"].evidence and "minimum bytes" in stops["add_kernel"].evidence
    assert stops["add_kernel"].severity == "info" and stops["add_kernel"].est_saving_s == 0.0
    assert not [f for f in report.findings if f.rule_id == "custom.memory-far-from-roof"]


def test_a_kernel_far_under_its_roof_gets_the_memory_access_finding_with_its_launch() -> None:
    report = advise(profile([args_row("strided_add_kernel", 0.12), args_row("add_kernel", 0.9)],
                            ceilings=h200_ceilings()))
    (far,) = [f for f in report.findings if f.rule_id == "custom.memory-far-from-roof"]
    assert far.subject == "strided_add_kernel"
    assert "12.0% or more" in far.evidence and "--counters ncu" in far.evidence
    assert "65536 blocks x 128 threads" in far.evidence and "26 registers/thread" in far.evidence
    assert "0 KiB shared memory/block" in far.evidence
    assert "Coalesce" in far.recommendation and far.est_saving_s > 0


def test_counters_fill_in_the_flops_of_a_bytes_only_row() -> None:
    """--counters ncu: the measured FLOPs become the row's FLOPs (and its roof the precision that
    executed them); the minimum bytes stay, the measured DRAM bytes sit beside them."""
    import pandas as pd

    from rooflinectl.analysis.counters import apply_counters

    data = profile([args_row("add_kernel", 0.9), args_row("copy_kernel", 0.9, tensors=2)], ceilings=h200_ceilings())
    by_row = pd.DataFrame({"measured_flops": [float(N), 0.0], "dram_bytes": [3.3 * N * 4, 2.1 * N * 4],
                           "l2_bytes": [float("nan")] * 2, "l1_bytes": [float("nan")] * 2,
                           "measured_precision": ["simt.fp32", ""], "measured_launches": [1, 1],
                           "measured_own_launches": [1, 1]}, index=[0, 1])
    table = apply_counters(data.kernels, by_row, data.ceilings)
    add, copy = table.iloc[0], table.iloc[1]
    assert add["flops"] == N and add["bytes"] == 3 * N * 4 and (add["unit"], add["precision"]) == ("simt", "fp32")
    assert add["cost_source"] == "triton-args" and "FLOPs measured by Nsight Compute" in add["cost_note"]
    assert add["bound"] == "memory" and add["intensity"] == 1 / 12
    assert copy["flops"] == 0.0 and copy["precision"] == "fp32"  # no FLOPs executed: its roof stays


def test_the_gpu_pieces_figures_read_a_profile(tmp_path, capsys) -> None:
    """scripts/user_kernels_figures.py (piece 77) on a profile of the example's kernels."""
    import importlib.util
    from pathlib import Path

    from rooflinectl.outputs.profile_file import save_profile

    spec = importlib.util.spec_from_file_location(
        "user_kernels_figures", Path(__file__).parents[1] / "scripts" / "user_kernels_figures.py")
    figures = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(figures)
    main = figures.main

    rows = [args_row("add_kernel", 0.92), args_row("strided_add_kernel", 0.12)]
    path = tmp_path / "user.profile.json"
    save_profile(profile(rows, ceilings=h200_ceilings()), path)
    assert main([str(path), "--size", str(N)]) == 0
    out = capsys.readouterr().out
    assert "FIGURE add_kernel: op add_kernel, 1 calls, 805.3 MB/call (exact minimum 805.3 MB, ratio 1.0000)" in out
    assert "bound memory, efficiency 0.92, source triton-args, flops nan" in out
    assert "FIGURE advice strided_add_kernel: custom.memory-far-from-roof" in out
    assert "FIGURE advice add_kernel: roof.stop-here" in out and "CHECK softmax_kernel: not in the profile" in out


def test_a_small_user_kernel_at_its_roof_still_gets_stop_here() -> None:
    """As on the H200 (piece 77): the softmax at 92% of its roof is 1.7% of kernel time next to a
    slow strided add; its author still learns to stop. Library kernels keep the 5% floor."""
    rows = [args_row("strided_add_kernel", 0.05), args_row("softmax_kernel", 0.92, tensors=2)]
    report = advise(profile(rows, ceilings=h200_ceilings()))
    assert [f.subject for f in report.findings if f.rule_id == "roof.stop-here"] == ["softmax_kernel"]
