"""Per-rank communication overlap: hand-made timelines, and the recorded 2-rank DDP GPT-2 run
against a brute-force timeline; a rank's place in the job from torchrun's environment."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from real_traces import attributed

from rooflinectl.analysis.communication import communication_summary, covered_ns
from rooflinectl.attribution.iterations import find_iterations
from rooflinectl.attribution.spans import union
from rooflinectl.attribution.steady import split_steady
from rooflinectl.capture.run.distributed import (
    rank_device_index,
    rank_info,
    rank_output_path,
    rank_pattern,
)


def _launches(spans: list[tuple[str, int, int]]) -> pd.DataFrame:
    return pd.DataFrame([{"op_family": family, "start_ns": a, "end_ns": b, "time_s": (b - a) / 1e9, "op": family,
                          "shapes": "[1]", "dtype": "fp32", "bytes": 4.0, "kernel": family, "launch_ns": a}
                         for family, a, b in spans])


def test_overlap_by_hand() -> None:
    # compute 0-100 and 150-200; collectives 80-120 (20 hidden, 20 exposed) and 140-160 (10 + 10)
    # and 300-310 (exposed); a second collective stream overlapping the first: 90-130 (union 80-130)
    spans = [("gemm", 0, 100), ("gemm", 150, 200), ("collective", 80, 120), ("collective", 140, 160),
             ("collective", 300, 310), ("collective", 90, 130)]
    s = communication_summary(_launches(spans), iterations=2)
    assert s is not None
    assert s["busy_s"] == pytest.approx((50 + 20 + 10) / 1e9)
    assert s["overlapped_s"] == pytest.approx((20 + 10) / 1e9)
    assert s["exposed_s"] == pytest.approx((30 + 10 + 10) / 1e9)
    assert s["exposed_per_iteration_s"] == pytest.approx(50 / 2 / 1e9)
    exposed = {(rec[6] * 1e9): rec[5] * 1e9 for rec in s["collectives"]}  # start -> own exposed time
    assert exposed == pytest.approx({80: 20, 90: 30, 140: 10, 300: 10})


def test_no_collectives_no_figures() -> None:
    assert communication_summary(_launches([("gemm", 0, 10)])) is None


def test_union_and_cover_against_a_bitmap() -> None:
    rng = np.random.default_rng(0)
    starts = rng.integers(0, 1000, 60)
    ends = starts + rng.integers(1, 80, 60)
    cover = union(starts[:30], ends[:30])
    bitmap = np.zeros(1200, dtype=bool)
    for a, b in zip(starts[:30], ends[:30]):
        bitmap[a:b] = True
    got = covered_ns(starts[30:], ends[30:], cover)
    want = [int(bitmap[a:b].sum()) for a, b in zip(starts[30:], ends[30:])]
    assert got.tolist() == want
    assert int((cover[1] - cover[0]).sum()) == int(bitmap.sum())


def test_real_ddp_exposed_communication_against_a_microsecond_bitmap() -> None:
    """Rank 0's all-reduces over the steady-state steps: exposed time from our interval arithmetic
    equals a 1 us bitmap of the raw kernel events launched in those steps (NCCL vs every other
    kernel, memcpy and memset)."""
    trace, found = attributed("ddp_gpt2.rank0")
    state = split_steady(found.launches, find_iterations(trace, found.launches))
    summary = communication_summary(state.steady, len(state.iteration_times_s))
    spans = state.host_spans_ns
    kernels = [k for k in trace.kernels
               if any(a <= trace.launch_ts_ns.get(k.correlation, -1) < b for a, b in spans)]
    base = min(k.ts_ns for k in kernels) // 1000
    size = max(k.end_ns for k in kernels) // 1000 - base + 2
    nccl, other = np.zeros(size, dtype=bool), np.zeros(size, dtype=bool)
    for k in kernels:
        target = nccl if k.name.startswith("ncclDevKernel") else other
        target[k.ts_ns // 1000 - base:k.end_ns // 1000 - base] = True
    nccl_launches = sum(k.name.startswith("ncclDevKernel") for k in kernels)
    assert summary["launches"] == nccl_launches >= 3 * len(spans)  # 3 all-reduces a step (+ DDP's bucket rebuild)
    assert summary["exposed_s"] == pytest.approx((nccl & ~other).sum() / 1e6, rel=0.02)
    assert summary["overlapped_s"] == pytest.approx((nccl & other).sum() / 1e6, rel=0.02)


def test_rank_environment_and_file_names() -> None:
    env = {"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2", "GROUP_RANK": "1"}
    info = rank_info(env)
    assert info is not None and (info["rank"], info["world_size"], info["local_rank"], info["node_rank"]) == (3, 4, 1, 1)
    assert rank_info({}) is None
    assert rank_output_path("rooflinectl.profile.json", info) == "rooflinectl.profile.rank3.json"
    assert rank_output_path("out/r{rank}-of-{world_size}.json", info) == "out/r3-of-4.json"
    assert rank_output_path("a{b}.json", None) == "a{b}.json"
    assert rank_pattern("rooflinectl.profile.json", info) == "rooflinectl.profile.rank*.json"
    assert rank_pattern("out/n{node_rank}.r{rank}.json", info) == "out/n*.r*.json"
    assert rank_device_index(info, 2) == 1 and rank_device_index(info, 1) is None
    assert re.fullmatch(r"rooflinectl\.profile\.rank0\.json",
                        rank_output_path("rooflinectl.profile.json", {**info, "rank": 0}))


def test_own_device_index_is_the_ranks_gpu_else_the_current_one(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    from rooflinectl.capture.run.distributed import own_device_index

    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    for key in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK"):
        monkeypatch.delenv(key, raising=False)
    assert own_device_index() == 0  # no torchrun: the current device
    for key, value in {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2"}.items():
        monkeypatch.setenv(key, value)
    assert own_device_index() == 1  # rank 1 works on GPU 1 before its script selects it
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert own_device_index() == 0  # one visible GPU per rank (CUDA_VISIBLE_DEVICES set per rank)
